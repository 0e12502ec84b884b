/** The demo's Form B conversation on the timeline: what the client's conversation store shows, as it changes. */
import type { FormBClient, ConversationEntry } from '../client/form-b.js';
import { textOf } from './chat.js';
import type { DemoTimeline } from './timeline.js';

/** Prints what the conversation shows as it changes: the typing indicator, tool calls, messages, errors. */
export function showConversation(client: FormBClient, session: string, t: DemoTimeline): void {
  let shown = 0;
  let typing: string | undefined;
  client.conversation(session).subscribe(({ context }) => {
    if (context.typing?.label !== typing) {
      typing = context.typing?.label;
      if (typing !== undefined) t.say('chat B', `  … ${typing} (the typing indicator shows)`);
    }
    for (const entry of context.entries.slice(shown)) if (entry.kind !== 'user') t.say('chat B', lineOf(entry));
    shown = context.entries.length;
  });
}

function lineOf(entry: Exclude<ConversationEntry, { kind: 'user' }>): string {
  switch (entry.kind) {
    case 'assistant':
      return textOf('reply', { text: entry.text });
    case 'tool_call':
      return textOf('progress', { status: 'tool_call', label: entry.label });
    case 'error':
      return textOf('error', { code: entry.code, message: entry.message });
  }
}

/** Resolves once the conversation has the assistant's answer (or an error) to the message `taskId`. */
export function conversationAnswered(client: FormBClient, session: string, taskId: string): Promise<void> {
  const store = client.conversation(session);
  const answered = () =>
    store.getSnapshot().context.entries.some((entry) => entry.task_id === taskId && (entry.kind === 'assistant' || entry.kind === 'error'));
  return new Promise((resolve) => {
    if (answered()) return resolve();
    const subscription = store.subscribe(() => {
      if (!answered()) return;
      subscription.unsubscribe();
      resolve();
    });
  });
}

/**
 * `assistant-relay chat`: a terminal chat with an assistant host over Form A, for people. Each line typed
 * is a task; its progress shows as a status line (typing, a tool call), its reply as a line of the
 * conversation, an error as one too. When the network drops, it says so at once (idle or not),
 * reconnects, says so, and resumes: no reply is lost or shown twice. `--json` writes one JSON object per line instead, for scripts. End of
 * input waits for the replies still pending, then exits.
 */
import { createInterface } from 'node:readline';
import { FormAClient } from '../client/form-a.js';
import { TaskFailed, type TaskHandle } from '../client/task.js';
import type { Clock } from '../client/clock.js';
import { baseUrlFlag, readFlags, requiredFlag } from './flags.js';
import { readTokenFile } from './service.js';

export const CHAT_USAGE = `usage: assistant-relay chat --url URL --token-file FILE [--session S] [--json]
  --url URL                the assistant host's base URL (its Form A endpoints)
  --token-file FILE        its ASSISTANT_TOKEN (a private file)
  --session S              the session to talk in (default a fresh one)
  --json                   one JSON object per line (said, progress, reply, error, stream) instead of text
Type a line and press Enter; Ctrl-D ends the chat once the replies still due have come.
Each flag may also be set as ASSISTANT_RELAY_<FLAG>.`;

const FLAGS = {
  url: { type: 'string' },
  'token-file': { type: 'string' },
  session: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export async function chatCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const flags = readFlags(argv, FLAGS, env);
  const url = baseUrlFlag('url', requiredFlag(flags, 'url'));
  const token = readTokenFile(requiredFlag(flags, 'token-file'), { create: false });
  const session = flags('session') ?? `chat-${crypto.randomUUID().slice(0, 8)}`;
  const json = flags('json') === true;
  const show = json
    ? (kind: string, fields: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ kind, session, ...fields })}\n`)
    : (kind: string, fields: Record<string, unknown>) => process.stdout.write(`${textOf(kind, fields)}\n`);
  if (!json) process.stdout.write(`chat in session ${session} at ${url}; Ctrl-D to end\n`);
  const chat = openChat({ url, token, session, show });
  const lines = createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    const text = line.trim();
    if (text === '') continue;
    if (json) show('said', { text });
    chat.say(text);
  }
  await chat.end();
}

export type Show = (kind: string, fields: Record<string, unknown>) => void;

export interface Chat {
  /** Sends a line as a task; its progress and its end are shown as they come. */
  say(text: string): void;
  /** Waits for the replies still due, then closes the stream. */
  end(): Promise<void>;
}

/**
 * A chat in one session. It holds the session's stream for its whole life (as a recording does, 3.1 rule
 * 4), not only while a reply is due: a chat is a conversation a person watches, and a drop while nothing
 * is pending (the host killed, the network gone) is shown when it happens, not when the next line is sent.
 */
export interface ChatOptions {
  readonly url: string;
  readonly token: string;
  readonly session: string;
  readonly show: Show;
  readonly clock?: Clock;
}

export function openChat(options: ChatOptions): Chat {
  const { url, token, session, show, clock } = options;
  const client = new FormAClient({ url, token, onStream: streamNotices(show), ...(clock ? { clock } : {}) });
  // A refusal (a wrong token, a session that ended) is shown once here; each line sent then says it again.
  client.hold(session).catch((error: unknown) => {
    show('error', { code: error instanceof TaskFailed ? error.reason : 'failed', message: (error as Error).message });
  });
  const pending = new Set<Promise<void>>();
  return {
    say(text) {
      const done = followTask(client.send(session, text), show).finally(() => pending.delete(done));
      pending.add(done);
    },
    async end() {
      await Promise.all(pending);
      // Closing lets the held stream go too (and stops waiting for one that never opened).
      client.close();
    },
  };
}

/** What the chat says of its stream: that it dropped (or could not be opened), once, and that it is back. */
export function streamNotices(show: Show): (session_id: string, state: 'open' | 'waiting' | 'closed') => void {
  let opened = false;
  let down = false;
  return (_, state) => {
    if (state === 'waiting' && !down) {
      down = true;
      show('stream', { state: opened ? 'reconnecting' : 'unreachable' });
    } else if (state === 'open') {
      if (down) show('stream', { state: opened ? 'reconnected' : 'connected' });
      down = false;
      opened = true;
    }
  };
}

/** Shows a task's progress and its end (reply or error) as they come, each as one event of `show`. */
export async function followTask(task: TaskHandle, show: Show): Promise<void> {
  task.onProgress((progress) => show('progress', { task_id: task.task_id, status: progress.status, label: progress.label }));
  try {
    const reply = await task.reply;
    if (reply.status === 'message') show('reply', { task_id: task.task_id, text: reply.reply_text });
    else if (reply.status === 'errored') show('error', { task_id: task.task_id, code: reply.error_code, message: reply.error_message });
    else show('reply', { task_id: task.task_id, status: reply.status });
  } catch (error) {
    const failed = error instanceof TaskFailed ? error : undefined;
    show('error', {
      task_id: task.task_id,
      code: failed?.kind === 'lost' ? 'lost' : (failed?.reason ?? 'failed'),
      message: (error as Error).message,
    });
  }
}

const STREAM_WORDS: Record<string, string> = {
  reconnecting: 'connection lost: reconnecting…',
  reconnected: 'reconnected',
  unreachable: 'cannot reach the host: trying again…',
  connected: 'connected',
};

/** The line a person reads for each event. */
export function textOf(kind: string, fields: Record<string, unknown>): string {
  switch (kind) {
    case 'progress':
      return fields.status === 'typing' ? `  … ${String(fields.label)}` : `  ⚙ ${String(fields.label)}`;
    case 'reply':
      return fields.text === undefined ? `  (${String(fields.status)})` : `assistant: ${String(fields.text)}`;
    case 'error':
      return `  ! error ${String(fields.code)}: ${String(fields.message)}`;
    case 'stream':
      return `  (${STREAM_WORDS[String(fields.state)] ?? String(fields.state)})`;
    default:
      return JSON.stringify(fields);
  }
}

/**
 * The client's side of Form B (1.6, 2.5, 4.3) for a desktop app: a loopback callback listener and an
 * append-only conversation per session, as an `@xstate/store` a UI subscribes to. Node-only (it listens).
 *
 * - Each message the person sends is `POST /v1/incoming` with the listener as its callback; the host
 *   posts every reply to `{callback}/tasks/{task_id}` with the callback token, which the listener checks
 *   (constant time), as it checks that the path's task id is a UUID.
 * - Replies are appended once each (deduped by `message_id`: delivery is at least once). `typing` shows
 *   an indicator that goes away after `typingMs` without another `typing`, or at the next reply; the
 *   older statuses `completed`, `silent` and `tool_call` (2.5) are taken too.
 * - A session the client closed answers `{ok:true, ignored:true, reason:"session_ended"}`, which ends it
 *   at the host as well (PROTOCOL.md 3b.11).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createStore } from '@xstate/store';
import type { TimerHandle } from '../../engine/core/clock.js';
import { CallbackReplyBody, ErrorBody, IncomingAccepted, IncomingIgnored } from '../../protocol/wire.js';
import { clientClock, type Clock } from './clock.js';

/** One line of a conversation. */
export type ConversationEntry =
  | { readonly kind: 'user'; readonly task_id: string; readonly text: string; readonly at: number }
  | { readonly kind: 'assistant'; readonly task_id: string; readonly message_id: string; readonly text: string; readonly at: number }
  | { readonly kind: 'tool_call'; readonly task_id: string; readonly label: string; readonly at: number }
  | { readonly kind: 'error'; readonly task_id: string; readonly code: string; readonly message: string; readonly at: number };

export interface ConversationContext {
  readonly entries: readonly ConversationEntry[];
  /** The typing indicator while it shows: its label, and when it goes away without another `typing`. */
  readonly typing: { readonly label: string; readonly until: number } | undefined;
  readonly ended: boolean;
}

function conversationStore() {
  return createStore({
    context: { entries: [], typing: undefined, ended: false } as ConversationContext,
    on: {
      append: (context, event: { entry: ConversationEntry }) => ({
        ...context,
        entries: [...context.entries, event.entry],
        typing: event.entry.kind === 'tool_call' ? context.typing : undefined,
      }),
      typing: (context, event: { label: string; until: number }) => ({ ...context, typing: { label: event.label, until: event.until } }),
      stopTyping: (context) => ({ ...context, typing: undefined }),
      end: (context) => ({ ...context, ended: true, typing: undefined }),
    },
  });
}

export type ConversationStore = ReturnType<typeof conversationStore>;

export interface FormBClientOptions {
  /** The host's base URL and its ASSISTANT_TOKEN. */
  readonly url: string;
  readonly token: string;
  /** How long the typing indicator shows without another `typing`. Default 15 s. */
  readonly typingMs?: number;
  /** Where its timer and timestamps come from. Default the system's. */
  readonly clock?: Clock;
}

interface Conversation {
  readonly store: ConversationStore;
  readonly seen: Set<string>;
  timer: TimerHandle;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class FormBClient {
  private readonly conversations = new Map<string, Conversation>();
  /** Sent with each message as its callback token; only the host that got it can post here. */
  private readonly callbackToken = randomUUID();
  private server: Server | undefined;
  private base = '';

  private readonly clock: Clock;

  constructor(private readonly options: FormBClientOptions) {
    this.clock = options.clock ?? clientClock;
  }

  /** Starts the callback listener on loopback; resolves with its base URL. */
  async listen(port = 0): Promise<string> {
    this.server = createServer((request, response) => void this.receive(request, response));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/assistant`;
    return this.base;
  }

  /** The session's conversation, for a UI to read and subscribe to. */
  conversation(sessionId: string): ConversationStore {
    return this.conversationOf(sessionId).store;
  }

  /** Sends a message; it is in the conversation once the host has taken it. */
  async send(sessionId: string, text: string): Promise<string> {
    if (this.server === undefined) throw new Error('listen() first: replies come to the callback listener');
    const task_id = randomUUID();
    const response = await fetch(`${this.options.url}/v1/incoming`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.options.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: sessionId, task_id, text, callback: { url: this.base, token: this.callbackToken } }),
    });
    const body: unknown = await response.json().catch(() => undefined);
    const conversation = this.conversationOf(sessionId);
    if (IncomingIgnored.safeParse(body).success) {
      conversation.store.trigger.end();
      throw new Error('the session has ended');
    }
    if (!response.ok || !IncomingAccepted.safeParse(body).success) {
      const error = ErrorBody.safeParse(body);
      throw new Error(error.success ? `${error.data.error.code}: ${error.data.error.message}` : `the host answered ${response.status}`);
    }
    conversation.store.trigger.append({ entry: { kind: 'user', task_id, text, at: this.clock.now() } });
    return task_id;
  }

  /** Closes the session on this side: the host is told at its next callback, and ends it too. */
  endSession(sessionId: string): void {
    this.conversationOf(sessionId).store.trigger.end();
  }

  async close(): Promise<void> {
    for (const { timer } of this.conversations.values()) this.clock.clearTimeout(timer);
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }

  private conversationOf(sessionId: string): Conversation {
    let conversation = this.conversations.get(sessionId);
    if (conversation === undefined) {
      conversation = { store: conversationStore(), seen: new Set(), timer: undefined };
      this.conversations.set(sessionId, conversation);
    }
    return conversation;
  }

  private async receive(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const answer = (status: number, body: unknown): void => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const presented = Buffer.from(request.headers.authorization ?? '');
    const expected = Buffer.from(`Bearer ${this.callbackToken}`);
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected))
      return answer(401, { error: { code: 'unauthorized', message: 'wrong callback token' } });
    const match = /^\/assistant\/tasks\/([^/]+)$/.exec(request.url ?? '');
    if (request.method !== 'POST' || match === null || !UUID.test(match[1]!))
      return answer(404, { error: { code: 'not_found', message: 'no such callback path' } });
    const taskId = match[1]!;
    let text = '';
    for await (const chunk of request) text += chunk;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = CallbackReplyBody.safeParse(json);
    if (!parsed.success) return answer(400, { error: { code: 'invalid_request', message: 'not a reply body' } });
    const reply = parsed.data;
    const conversation = this.conversationOf(reply.session_id);
    if (conversation.store.getSnapshot().context.ended) return answer(200, { ok: true, ignored: true, reason: 'session_ended' });
    this.take(conversation, taskId, reply);
    return answer(200, { ok: true });
  }

  private take(conversation: Conversation, task_id: string, reply: CallbackReplyBody): void {
    const { store } = conversation;
    const at = this.clock.now();
    switch (reply.status) {
      case 'typing': {
        const typingMs = this.options.typingMs ?? 15_000;
        this.clock.clearTimeout(conversation.timer);
        conversation.timer = this.clock.setTimeout(() => store.trigger.stopTyping(), typingMs);
        store.trigger.typing({ label: reply.label, until: at + typingMs });
        return;
      }
      case 'message':
        if (conversation.seen.has(reply.message_id)) return;
        conversation.seen.add(reply.message_id);
        this.clock.clearTimeout(conversation.timer);
        store.trigger.append({ entry: { kind: 'assistant', task_id, message_id: reply.message_id, text: reply.reply_text, at } });
        return;
      case 'tool_call':
        store.trigger.append({ entry: { kind: 'tool_call', task_id, label: reply.label, at } });
        return;
      case 'errored':
        this.clock.clearTimeout(conversation.timer);
        store.trigger.append({ entry: { kind: 'error', task_id, code: reply.error_code, message: reply.error_message, at } });
        return;
      default:
        // completed, silent: the turn is over, nothing to show but the indicator going away.
        this.clock.clearTimeout(conversation.timer);
        store.trigger.stopTyping();
    }
  }
}

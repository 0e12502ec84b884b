/**
 * A loopback server that speaks the chat-completions wire, for the `openai` reasoner's tests: each request
 * gets the next scripted answer (the last one repeats), and is recorded with its parsed body.
 */
import type * as http from 'node:http';
import { Receiver, type Received } from '../support/receiver.js';

export type ChatReply =
  | { readonly content: string; readonly stream?: boolean }
  | { readonly refusal: string }
  | { readonly status: number; readonly body?: string; readonly headers?: Record<string, string> }
  | { readonly hang: true };

export interface ChatServer {
  readonly receiver: Receiver;
  /** `{url}/v1`, the base URL to configure. */
  readonly baseUrl: string;
  readonly bodies: () => Array<Record<string, any>>;
  /** Resolves when a hanging request's connection closes. */
  readonly hangClosed: Promise<void>;
}

export function completion(message: Record<string, unknown>): string {
  return JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }],
  });
}

/** The content in three deltas, CRLF line ends, a comment and a role-only first chunk, as servers send them. */
function streamed(content: string, response: http.ServerResponse): void {
  const third = Math.ceil(content.length / 3);
  const chunk = (delta: Record<string, unknown>) =>
    `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta }] })}\r\n\r\n`;
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.write(': keep-alive\r\n\r\n');
  response.write(chunk({ role: 'assistant' }));
  for (let i = 0; i < content.length; i += third) response.write(chunk({ content: content.slice(i, i + third) }));
  response.end('data: [DONE]\r\n\r\n');
}

export async function chatServer(replies: readonly ChatReply[]): Promise<ChatServer> {
  let served = 0;
  let hangClosed!: () => void;
  const closed = new Promise<void>((resolve) => (hangClosed = resolve));
  const receiver = await Receiver.start((_received: Received, response) => {
    const reply = replies[Math.min(served++, replies.length - 1)]!;
    if ('hang' in reply) {
      response.on('close', hangClosed);
    } else if ('status' in reply) {
      response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(reply.body ?? '');
    } else if ('refusal' in reply) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(completion({ content: null, refusal: reply.refusal }));
    } else if (reply.stream) {
      streamed(reply.content, response);
    } else {
      response.writeHead(200, { 'content-type': 'application/json' }).end(completion({ content: reply.content }));
    }
  });
  return {
    receiver,
    baseUrl: `${receiver.url}/v1`,
    bodies: () => receiver.requests.map((r) => JSON.parse(r.body) as Record<string, any>),
    hangClosed: closed,
  };
}

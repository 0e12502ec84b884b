/**
 * Clients for the A2A bench peer (a2a-server.ts): the SDK's own, and the same wire by hand for the
 * load generator. A turn is one JSON-RPC `SendStreamingMessage` (v1.0's name for v0.3's
 * `message/stream`), answered as SSE: task, working status, artifact, completed status, end.
 * A session is an A2A context: its first turn lets the server pick the contextId (the server owns
 * contexts), and its later turns send that contextId back. Each turn is a new task in it.
 */
import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import { Role, TaskState, taskStateToJSON, type Part, type SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';

import type { OpenSession, TurnResult } from '../clients/turn.js';

/** Tells this process's message ids from any other's; the SDK wants them unique. */
const RUN = randomUUID().slice(0, 8);
const IDLE_TEXT = '__idle__';

/** The states that end a stream (as the SDK's server event queue has them), by their wire names. */
const FINAL_STATES = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_INPUT_REQUIRED',
]);

/** What one turn's stream must hold, fed event by event by either client. */
class TurnCheck {
  progress = 0;
  /** The task's context, known once its first event is read. */
  contextId: string | undefined;
  private text = '';
  private final = false;

  constructor(
    private readonly sent: string,
    private readonly sessionContextId: string,
  ) {}

  task(contextId: string): void {
    if (this.contextId !== undefined) throw new Error('a second task event in one turn');
    if (this.sessionContextId !== '' && contextId !== this.sessionContextId) {
      throw new Error(`task in context ${contextId}, not the session's ${this.sessionContextId}`);
    }
    this.contextId = contextId;
  }

  status(state: string): void {
    this.inTask(`status ${state}`);
    if (!FINAL_STATES.has(state)) {
      this.progress++;
      return;
    }
    if (state !== 'TASK_STATE_COMPLETED') throw new Error(`turn ended ${state}`);
    this.final = true;
  }

  artifact(text: string): void {
    this.inTask('artifact');
    this.text += text;
  }

  other(what: string): never {
    throw new Error(`unexpected ${what} event`);
  }

  result(): TurnResult {
    if (!this.final) throw new Error('stream ended before the task completed');
    if (this.progress !== 1) throw new Error(`${this.progress} non-final status updates, expected 1`);
    if (this.text !== this.sent) throw new Error(`reply ${JSON.stringify(this.text)} is not the text sent, ${JSON.stringify(this.sent)}`);
    return { progress: this.progress, text: this.text };
  }

  private inTask(what: string): void {
    if (this.contextId === undefined) throw new Error(`${what} before the task`);
    if (this.final) throw new Error(`${what} after the final status`);
  }
}

// --- The SDK's client ---

const factory = new ClientFactory();

function sdkText(parts: readonly Part[]): string {
  let text = '';
  for (const part of parts) if (part.content?.$case === 'text') text += part.content.value;
  return text;
}

export const sdkClient: OpenSession = async (base, index) => {
  const client = await factory.createFromUrl(base);
  let contextId = '';
  let turns = 0;
  return {
    async turn(text) {
      const request: SendMessageRequest = {
        tenant: '',
        message: {
          messageId: `${RUN}-sdk-${index}-${++turns}`,
          contextId,
          taskId: '',
          role: Role.ROLE_USER,
          parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
        configuration: undefined,
        metadata: undefined,
      };
      const check = new TurnCheck(text, contextId);
      // Iterated to the end, as the SDK's samples do: the server ends the stream right after the completed status.
      for await (const { payload } of client.sendMessageStream(request)) {
        switch (payload?.$case) {
          case 'task':
            check.task(payload.value.contextId);
            break;
          case 'statusUpdate':
            check.status(taskStateToJSON(payload.value.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED));
            break;
          case 'artifactUpdate':
            check.artifact(sdkText(payload.value.artifact?.parts ?? []));
            break;
          default:
            check.other(payload?.$case ?? 'empty');
        }
      }
      const result = check.result();
      contextId = check.contextId ?? contextId;
      return result;
    },
    async close() {},
  };
};

// --- The same wire by hand ---

/** The POSTs' sockets, for the whole process: a closed loop keeps one in flight per session. */
const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

interface WireResponse {
  readonly jsonrpc?: string;
  readonly id?: number | string | null;
  readonly error?: { readonly code?: number; readonly message?: string };
  readonly result?: {
    readonly task?: { readonly contextId?: string };
    readonly statusUpdate?: { readonly status?: { readonly state?: string } };
    readonly artifactUpdate?: { readonly artifact?: { readonly parts?: readonly { readonly text?: string }[] } };
  };
}

/** The JSON-RPC envelope of one streaming call, checked, and its result. */
function unwrap(data: string, id: number): NonNullable<WireResponse['result']> {
  const response = JSON.parse(data) as WireResponse;
  if (response.jsonrpc !== '2.0' || response.id !== id) throw new Error(`not a response to request ${id}: ${data.slice(0, 200)}`);
  if (response.error !== undefined) throw new Error(`JSON-RPC error ${response.error.code}: ${response.error.message}`);
  if (response.result === undefined) throw new Error(`response without a result: ${data.slice(0, 200)}`);
  return response.result;
}

function wireText(parts: readonly { readonly text?: string }[]): string {
  let text = '';
  for (const part of parts) if (part.text !== undefined) text += part.text;
  return text;
}

function rpcBody(id: number, messageId: string, contextId: string, text: string): string {
  const message =
    contextId === '' ? { messageId, role: 'ROLE_USER', parts: [{ text }] } : { messageId, contextId, role: 'ROLE_USER', parts: [{ text }] };
  return JSON.stringify({ jsonrpc: '2.0', method: 'SendStreamingMessage', params: { message, configuration: {} }, id });
}

interface SseCall {
  readonly request: http.ClientRequest;
  /** Settles when the response has ended (or failed, or an event handler threw). */
  readonly done: Promise<void>;
}

/**
 * POSTs `body` to `url` and feeds each SSE event's data to `onData`. The SDK's server writes one
 * `data:` line per event and LF line ends, and `event: error` before an error's data.
 */
function postSse(url: URL, body: string, onData: (data: string) => void): SseCall {
  let request!: http.ClientRequest;
  const done = new Promise<void>((resolve, reject) => {
    const fail = (error: Error): void => {
      request.destroy();
      reject(error);
    };
    request = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        // Without A2A-Version the SDK's server takes a request for v0.3, which it does not serve here.
        headers: {
          'a2a-version': '1.0',
          'content-type': 'application/json',
          accept: 'text/event-stream',
          'content-length': Buffer.byteLength(body),
        },
      },
      (response) => {
        const type = response.headers['content-type'] ?? '';
        if (response.statusCode !== 200 || !type.startsWith('text/event-stream')) {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => reject(new Error(`answered ${response.statusCode} ${type}: ${text.slice(0, 300)}`)));
          return;
        }
        let buffer = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let event = 'message';
            let data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('data:')) data += (data === '' ? '' : '\n') + line.slice(line.startsWith('data: ') ? 6 : 5);
              else if (line.startsWith('event:')) event = line.slice(6).trim();
            }
            try {
              if (event === 'error') throw new Error(`SSE error event: ${data.slice(0, 300)}`);
              if (data !== '') onData(data);
            } catch (error) {
              fail(error as Error);
              return;
            }
          }
        });
        response.on('end', () =>
          buffer.trim() === '' ? resolve() : reject(new Error(`stream ended inside an event: ${buffer.slice(0, 200)}`)),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
  return { request, done };
}

export const minimalClient: OpenSession = async (base, index) => {
  const url = new URL('/', base);
  let contextId = '';
  let turns = 0;
  return {
    async turn(text) {
      const id = ++turns;
      const check = new TurnCheck(text, contextId);
      const body = rpcBody(id, `${RUN}-min-${index}-${id}`, contextId, text);
      await postSse(url, body, (data) => {
        const result = unwrap(data, id);
        if (result.statusUpdate !== undefined) check.status(result.statusUpdate.status?.state ?? 'TASK_STATE_UNSPECIFIED');
        else if (result.artifactUpdate !== undefined) check.artifact(wireText(result.artifactUpdate.artifact?.parts ?? []));
        else if (result.task !== undefined) check.task(result.task.contextId ?? '');
        else check.other(Object.keys(result).join() || 'empty');
      }).done;
      const reply = check.result();
      contextId = check.contextId ?? contextId;
      return reply;
    },
    async close() {},
  };
};

/**
 * Opens an idle stream: a `SendStreamingMessage` of "__idle__", whose task the server keeps working
 * until it is cancelled or the client goes away. Resolves once the task and its working status have
 * arrived; the returned function drops the connection, and with it the task.
 */
export async function openIdleStream(base: string, index: number): Promise<() => void> {
  let events = 0;
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const call = postSse(new URL('/', base), rpcBody(1, `${RUN}-idle-${index}`, '', IDLE_TEXT), (data) => {
    const result = unwrap(data, 1);
    events++;
    if (events === 1 && result.task !== undefined) return;
    if (events === 2 && result.statusUpdate?.status?.state === 'TASK_STATE_WORKING') return opened();
    throw new Error(`idle stream: unexpected event ${events}: ${data.slice(0, 200)}`);
  });
  // Once closed, the dropped connection's errors are expected.
  call.done.catch(() => {});
  await Promise.race([
    open,
    call.done.then(() => {
      throw new Error('idle stream ended before it was open');
    }),
  ]);
  return () => call.request.destroy();
}

/**
 * A minimal Form A client for the load generator: the relay's wire, and the floor's, spoken by hand
 * with as little work per turn as the wire allows. A session holds one `GET /v1/events` stream on a
 * socket of its own; a turn is a POST on the process's shared keep-alive sockets, done when the POST
 * was answered 202 and the task's terminal frame read from the stream.
 */
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AwayAndBack, OpenSession, TurnResult, TurnSession } from './turn.js';

export const TOKEN = 'bench-token';
const AUTHORIZATION = `Bearer ${TOKEN}`;
/** Sockets for the POSTs: a closed loop keeps at most one in flight per session. */
const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

interface Pending {
  readonly taskId: string;
  readonly text: string;
  progress: number;
  posted: boolean;
  reply: string | undefined;
  readonly resolve: (result: TurnResult) => void;
  readonly reject: (error: Error) => void;
}

class FormASession implements TurnSession {
  private buffer = '';
  private turns = 0;
  private pending: Pending | undefined;
  private stream: http.ClientRequest | undefined;
  private failure: Error | undefined;
  /** The newest terminal reply's id: where a resumed stream starts. */
  lastEventId: string | undefined;
  /** Bytes read on the stream so far. */
  received = 0;

  constructor(
    private readonly url: URL,
    readonly sessionId: string,
  ) {}

  /** Opens the stream (from `lastEventId`, if given) and resolves on `: open`, so no reply can be missed. */
  connect(lastEventId?: string, onFrame?: (block: string) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      let opened = false;
      const headers: Record<string, string> = { authorization: AUTHORIZATION, accept: 'text/event-stream' };
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      const request = http.get(
        {
          host: this.url.hostname,
          port: this.url.port,
          path: `/v1/events?session_id=${encodeURIComponent(this.sessionId)}`,
          headers,
          agent: false,
        },
        (response) => {
          if (response.statusCode !== 200) {
            response.resume();
            reject(new Error(`${this.sessionId}: GET /v1/events answered ${response.statusCode}`));
            return;
          }
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            this.received += Buffer.byteLength(chunk);
            this.buffer += chunk;
            let end: number;
            while ((end = this.buffer.indexOf('\n\n')) >= 0) {
              const block = this.buffer.slice(0, end);
              this.buffer = this.buffer.slice(end + 2);
              if (block === ': open' && !opened) {
                opened = true;
                resolve();
              }
              onFrame?.(block);
              this.frame(block);
            }
          });
          response.on('close', () => this.fail(new Error(`${this.sessionId}: stream closed by the server`)));
        },
      );
      request.on('error', (error) => (opened ? this.fail(error) : reject(error)));
      this.stream = request;
    });
  }

  turn(text: string): Promise<TurnResult> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const taskId = `t${(this.turns += 1)}`;
    return new Promise((resolve, reject) => {
      const pending: Pending = { taskId, text, progress: 0, posted: false, reply: undefined, resolve, reject };
      this.pending = pending;
      postIncoming(this.url, this.sessionId, taskId, text).then(
        ({ status, answer }) => {
          if (status !== 202) return this.fail(new Error(`${this.sessionId}: POST answered ${status} ${answer.slice(0, 200)}`));
          pending.posted = true;
          this.settle(pending);
        },
        (error: Error) => this.fail(error),
      );
    });
  }

  async close(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    stream?.destroy();
  }

  /** Comments, progress (`data:` alone) and terminal replies (`id:` then `data:`); a resync frame is `event: resync`. */
  private frame(block: string): void {
    const pending = this.pending;
    if (block.startsWith('data: ')) {
      if (pending !== undefined && block.includes(`"task_id":"${pending.taskId}"`)) pending.progress += 1;
    } else if (block.startsWith('id: ')) {
      const nl = block.indexOf('\n');
      this.lastEventId = block.slice(4, nl);
      if (pending === undefined) return;
      const reply = JSON.parse(block.slice(nl + 7)) as { task_id?: string; status?: string; reply_text?: string };
      if (reply.task_id !== pending.taskId) return;
      pending.reply = reply.status === 'message' ? (reply.reply_text ?? '') : `(${String(reply.status)})`;
      this.settle(pending);
    }
  }

  private settle(pending: Pending): void {
    if (!pending.posted || pending.reply === undefined || this.pending !== pending) return;
    this.pending = undefined;
    if (pending.reply !== pending.text || pending.progress !== 1)
      pending.reject(
        new Error(
          `${this.sessionId}/${pending.taskId}: reply ${JSON.stringify(pending.reply).slice(0, 100)} after ${pending.progress} progress frames`,
        ),
      );
    else pending.resolve({ progress: pending.progress, text: pending.reply });
  }

  private fail(error: Error): void {
    if (this.stream === undefined) return; // closing on purpose
    this.failure ??= error;
    const pending = this.pending;
    this.pending = undefined;
    pending?.reject(error);
  }
}

/** Session ids are new at every open: a server kept across a bench's phases never sees one twice. */
const TAG = randomBytes(4).toString('hex');
let opened = 0;

/** A session's stream opened against the relay or the floor at `base`. */
export const minimalClient: OpenSession = async (base, index) => {
  const session = new FormASession(new URL(base), `bench-${TAG}-${(opened += 1)}-${index}`);
  await session.connect();
  return session;
};

export { FormASession };

/** An idle stream: a fresh session's `GET /v1/events`, open until the function returned is called. */
export async function openIdleStream(base: string, index: number): Promise<() => void> {
  const session = new FormASession(new URL(base), `idle-${TAG}-${(opened += 1)}-${index}`);
  await session.connect();
  return () => void session.close();
}

/** A user message to `/v1/incoming` on the process's shared sockets: the status and the body it was answered with. */
function postIncoming(url: URL, sessionId: string, taskId: string, text: string): Promise<{ status: number; answer: string }> {
  const body = JSON.stringify({ session_id: sessionId, task_id: taskId, text });
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/v1/incoming',
        headers: { authorization: AUTHORIZATION, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let answer = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (answer += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, answer }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function pendingTasks(url: URL, sessionId: string): Promise<number> {
  const response = await fetch(new URL(`/v1/sessions/${encodeURIComponent(sessionId)}`, url), {
    headers: { authorization: AUTHORIZATION },
  });
  return ((await response.json()) as { pending_task_ids: string[] }).pending_task_ids.length;
}

/**
 * Away and back on Form A: a first turn gives the client its cursor; its stream closed, `away` turns are
 * posted (as another device of the user would) and answered; then the stream is opened again with
 * `Last-Event-ID`, and read up to its resync frame, which follows the replay in the same write.
 */
export const awayAndBack: AwayAndBack = async (base, away) => {
  const url = new URL(base);
  const session = new FormASession(url, `away-${TAG}-${(opened += 1)}`);
  await session.connect();
  await session.turn('before leaving');
  await session.close();
  for (let n = 1; n <= away; n += 1) {
    const { status } = await postIncoming(url, session.sessionId, `away-${n}`, `while away ${n}`);
    if (status !== 202) throw new Error(`${session.sessionId}/away-${n}: POST answered ${status}`);
  }
  while ((await pendingTasks(url, session.sessionId)) > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const back = new FormASession(url, session.sessionId);
  let replayed = 0;
  let missed = 0;
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    back
      .connect(session.lastEventId, (block) => {
        if (block.startsWith('id: ')) replayed += 1;
        else if (block.startsWith('event: resync')) {
          missed = (JSON.parse(block.slice(block.indexOf('data: ') + 6)) as { missed_task_ids: string[] }).missed_task_ids.length;
          resolve();
        }
      })
      .catch(reject);
  });
  const catchUpMs = performance.now() - started;
  await back.close();
  // Every reply after the cursor is replayed or named: none is lost without a word.
  return { catchUpMs, bytes: back.received, replayed, missed, lost: Math.max(0, away - replayed - missed) };
};

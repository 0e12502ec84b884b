/**
 * What the floor (floor.ts) and the durable baseline (baselines/durable-turns.ts) share of the relay's
 * Form A wire: the bearer check, in constant time as the relay's (so each pays the same per-request
 * crypto), each session's open readers and its next frame number, and the run's ids in a frame's `id:`.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Whether an `Authorization` header carries `token` as its bearer. */
export function bearerCheck(token: string): (header: string | undefined) => boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(token);
  return (header) => header !== undefined && header.startsWith('Bearer ') && timingSafeEqual(digest(header.slice(7)), expected);
}

export interface EchoSession {
  readonly readers: Set<ServerResponse>;
  seq: number;
}

/** Each session by its id, made when first named. */
export class EchoSessions {
  private readonly sessions = new Map<string, EchoSession>();

  of(id: string): EchoSession {
    let session = this.sessions.get(id);
    if (session === undefined) this.sessions.set(id, (session = { readers: new Set(), seq: 0 }));
    return session;
  }

  /** Opens `response` as a reader of the session's replies (SSE, `: open` at once) until its request closes. */
  openReader(sessionId: string, request: IncomingMessage, response: ServerResponse): void {
    response.socket?.setNoDelay(true);
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
    });
    response.write(': open\n\n');
    const { readers } = this.of(sessionId);
    readers.add(response);
    request.on('close', () => readers.delete(response));
  }

  /** Ends every reader's stream (the server stops). */
  destroyReaders(): void {
    for (const { readers } of this.sessions.values()) for (const reader of readers) reader.destroy();
  }
}

/** The run's epoch and generation, as a frame's `id:` begins. */
export const RUN_ID = `${randomBytes(8).toString('base64url')}:${randomBytes(8).toString('base64url')}`;

/**
 * Identifier formats (2.6, 2.10). An event id is `{epoch}:{generation}:{seq}`; the client treats it as
 * opaque, the host parses it to resume. Epoch and generation are short lowercase base-36 tokens.
 */
import { LIMITS } from './limits.js';

export interface EventId {
  readonly epoch: string;
  readonly generation: string;
  readonly seq: number;
}

const TOKEN = /^[0-9a-z]{1,32}$/;
const SEQ = /^[1-9][0-9]{0,15}$/;

export function formatEventId(id: EventId): string {
  return `${id.epoch}:${id.generation}:${id.seq}`;
}

/** Parses a `Last-Event-ID`; `undefined` when it is not one we could have issued in form. */
export function parseEventId(text: string): EventId | undefined {
  const parts = text.split(':');
  if (parts.length !== 3) return undefined;
  const [epoch, generation, seq] = parts as [string, string, string];
  if (!TOKEN.test(epoch) || !TOKEN.test(generation) || !SEQ.test(seq)) return undefined;
  const n = Number(seq);
  return Number.isSafeInteger(n) ? { epoch, generation, seq: n } : undefined;
}

// Control characters would corrupt logs and SSE lines; the length caps keep one id from costing real memory.
const CONTROL = /[\u0000-\u001f\u007f]/;
const TASK_ID = new RegExp(`^[A-Za-z0-9._:-]{1,${LIMITS.taskIdMaxLength}}$`);

export function isSessionId(text: string): boolean {
  return text.length >= 1 && text.length <= LIMITS.sessionIdMaxLength && !CONTROL.test(text);
}

/** `.` and `..` are path segments a callback receiver would normalise away (`/tasks/..` is `/`): never task ids. */
const DOT_SEGMENT = /^\.\.?$/;

export function isTaskId(text: string): boolean {
  return TASK_ID.test(text) && !DOT_SEGMENT.test(text);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Form B's task ids (2.10): a UUID in its canonical 8-4-4-4-12 hex form, any case. */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}

/** `insights:<call-session>` routes replies to the Insights tab (1.7, 4.4). */
export const INSIGHTS_PREFIX = 'insights:';

export function isInsightsSession(sessionId: string): boolean {
  return sessionId.startsWith(INSIGHTS_PREFIX);
}

/**
 * How the host checks speak to a host (spec 4.2): open a session's stream, send an incoming event (the
 * Form B checks send theirs this way too), read frames until a task's terminal reply. Each session a
 * check makes is new (the run's prefix, a label, a counter), so checks never see each other's replies.
 */
import { randomUUID } from 'node:crypto';
import { RuleBroken, rule, shown, type CheckScope } from './check.js';
import type { Target } from './target.js';
import { WireStream, dataObject, type WireFrame } from './wire-stream.js';

/** What every host check is given, of either form. */
export interface HostContext {
  readonly target: Target;
  /** The host's token (spec 5: the same on both routes). */
  readonly token: string;
  /** Unique to this run: the start of every session id it makes. */
  readonly run: string;
  /** How long a reply may take to arrive. */
  readonly replyMs: number;
}

export interface FormAHostContext extends HostContext {
  /** The keep-alive interval the host is configured with (spec 4.2 rule 6: about 20 s). */
  readonly keepaliveMs: number;
  /** How many readers of one session the reader-cap check opens before it says none was refused. */
  readonly maxReaders: number;
}

export const TERMINAL = new Set(['message', 'completed', 'errored', 'silent']);
export const PROGRESS = new Set(['typing', 'tool_call']);

/** A reply frame with its body parsed. */
export interface Reply {
  readonly frame: WireFrame;
  readonly body: Record<string, unknown>;
}

let sessions = 0;

/** A new session id of this run; `extra` is added to test that the host echoes it exactly. */
export function newSession(context: HostContext, label: string, extra = ''): string {
  sessions += 1;
  return `${context.run}-${label}-${sessions}${extra}`;
}

const newTaskId = () => randomUUID();

const bearer = (context: HostContext) => ({ authorization: `Bearer ${context.token}` });

/** `GET /v1/events` for `session` (after `lastEventId`, when given): the response, and its stream when it is one. */
export async function openEvents(
  context: FormAHostContext,
  scope: CheckScope,
  session: string | undefined,
  options: { readonly lastEventId?: string; readonly headers?: Record<string, string> } = {},
): Promise<{ response: Response; stream: WireStream }> {
  if (scope.signal.aborted) throw new RuleBroken("the check's time was up");
  const controller = new AbortController();
  scope.signal.addEventListener('abort', () => controller.abort(), { once: true });
  scope.defer(() => controller.abort());
  const query = session === undefined ? '' : `?session_id=${encodeURIComponent(session)}`;
  const response = await context.target.fetch(`/v1/events${query}`, {
    headers: {
      accept: 'text/event-stream',
      ...bearer(context),
      ...(options.lastEventId === undefined ? {} : { 'last-event-id': options.lastEventId }),
      ...options.headers,
    },
    signal: controller.signal,
    stream: true,
  });
  return { response, stream: new WireStream(response, controller) };
}

/** A stream that answered 200 and opened (its `: open` read); a `RuleBroken` otherwise. */
export async function openedStream(
  context: FormAHostContext,
  scope: CheckScope,
  session: string,
  lastEventId?: string,
): Promise<WireStream> {
  const { response, stream } = await openEvents(context, scope, session, lastEventId === undefined ? {} : { lastEventId });
  rule(
    response.status === 200,
    `GET /v1/events for a session answered ${response.status}, not 200: ${shown(await response.text().catch(() => ''))}`,
  );
  return stream;
}

/** A new session of this run with its stream open: what most checks begin with. */
export async function openSession(context: FormAHostContext, scope: CheckScope, label: string, extra = '') {
  const session = newSession(context, label, extra);
  return { session, stream: await openedStream(context, scope, session) };
}

/** A user message for the script agent (docs/conformance.md): its steps, in order. */
export const scriptText = (...steps: unknown[]) => JSON.stringify({ script: steps });

/** `POST /v1/incoming` with a user message. */
export function sendIncoming(
  context: HostContext,
  scope: CheckScope,
  body: { readonly session_id: string; readonly task_id: string; readonly text: string } & Record<string, unknown>,
  headers: Record<string, string> = bearer(context),
) {
  return context.target.json('/v1/incoming', { body, headers, signal: scope.signal });
}

/** Sends a message and requires it accepted (a 2xx). */
export async function sendTask(
  context: FormAHostContext,
  scope: CheckScope,
  session: string,
  text: string,
  task = newTaskId(),
): Promise<string> {
  const answer = await sendIncoming(context, scope, { session_id: session, task_id: task, text });
  rule(answer.status >= 200 && answer.status < 300, `POST /v1/incoming answered ${answer.status}: ${shown(answer.text)}`);
  return task;
}

/** Whether a frame is a reconciliation frame (spec 2.7: its marker is not shown, its fields are). */
export const isResync = (body: Record<string, unknown>) => 'missed_task_ids' in body || 'recovery_complete' in body;

/** Frames of `stream` until `task`'s terminal reply: the progress before it, and the reply. */
export async function untilTerminal(
  context: FormAHostContext,
  stream: WireStream,
  task: string,
): Promise<{ progress: Reply[]; terminal: Reply }> {
  const progress: Reply[] = [];
  const deadline = performance.now() + context.replyMs;
  for (;;) {
    const frame = await stream.nextFrame(Math.max(0, deadline - performance.now()), `the terminal reply of task ${task}`);
    const body = dataObject(frame);
    if (body.task_id !== task) continue;
    if (PROGRESS.has(body.status as string)) progress.push({ frame, body });
    else return { progress, terminal: { frame, body } };
  }
}

/** A session with `count` settled tasks, each sent once the last was answered: their terminal replies, in order. */
export async function settledTasks(
  context: FormAHostContext,
  scope: CheckScope,
  stream: WireStream,
  session: string,
  count: number,
  text = (i: number) => `conformance message ${i}`,
): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (let i = 0; i < count; i += 1) {
    const task = await sendTask(context, scope, session, text(i));
    const { terminal } = await untilTerminal(context, stream, task);
    rule(
      TERMINAL.has(terminal.body.status as string),
      `task ${task}'s reply has status ${shown(terminal.body.status)}, not a terminal one`,
    );
    replies.push(terminal);
  }
  return replies;
}

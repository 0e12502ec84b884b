/**
 * Form A host checks of the stream itself (spec 4.2 `GET /v1/events`, 2.5, 2.6, 6.2): how it opens,
 * what a reply frame is, which frames carry ids, keep-alives, and who may read.
 */
import { rule, shown, type Check } from './check.js';
import {
  PROGRESS,
  TERMINAL,
  sendTask,
  newSession,
  openSession,
  scriptText,
  openEvents,
  openedStream,
  sendIncoming,
  settledTasks,
  untilTerminal,
  type FormAHostContext,
} from './form-a-wire.js';
import { dataObject } from './wire-stream.js';

/**
 * Whether JSON text is compact: no whitespace outside its strings. Any escaping a JSON writer chooses
 * (`\u00dc`, `\/`) is compact; the kit's own `JSON.stringify` is not the rule.
 */
function isCompactJson(text: string): boolean {
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === ' ' || c === '\t' || c === '\n' || c === '\r') return false;
  }
  return true;
}

/** `{epoch}:{generation}:{seq}`, seq an integer (spec 2.6). */
const EVENT_ID = /^([^:\s]+):([^:\s]+):(\d+)$/;

export const FORM_A_STREAM_CHECKS: readonly Check<FormAHostContext>[] = [
  {
    id: 'form-a.events-need-session',
    spec: '4.2 GET /v1/events rule 1',
    title: 'a stream asked for without session_id is answered 400',
    async run(context, scope) {
      const { response } = await openEvents(context, scope, undefined);
      rule(response.status === 400, `GET /v1/events without session_id answered ${response.status}`);
    },
  },
  {
    id: 'form-a.unauthorized',
    spec: 'PROTOCOL.md 4.1',
    title: 'a missing or wrong Bearer token is answered 401 on both routes',
    async run(context, scope) {
      const session = newSession(context, 'auth');
      for (const [what, headers] of [
        ['no Authorization', {}],
        ['a wrong token', { authorization: `Bearer ${context.token}x` }],
      ] as const) {
        const events = await context.target.fetch(`/v1/events?session_id=${encodeURIComponent(session)}`, {
          headers,
          signal: scope.signal,
        });
        await events.body?.cancel();
        rule(events.status === 401, `GET /v1/events with ${what} answered ${events.status}`);
        const incoming = await sendIncoming(context, scope, { session_id: session, task_id: 'conformance-auth', text: 'hello' }, headers);
        rule(incoming.status === 401, `POST /v1/incoming with ${what} answered ${incoming.status}`);
      }
    },
  },
  {
    id: 'form-a.open',
    spec: '4.2 GET /v1/events rule 5',
    title: 'the stream is text/event-stream and begins with the comment `: open`',
    async run(context, scope) {
      const { response, stream } = await openEvents(context, scope, newSession(context, 'open'));
      rule(response.status === 200, `GET /v1/events answered ${response.status}`);
      const type = response.headers.get('content-type') ?? '';
      rule(/^text\/event-stream\b/i.test(type), `its content-type is ${shown(type)}`);
      const first = await stream.next(context.replyMs, 'the first line');
      rule(stream.firstLine === ': open' || stream.firstLine === ':open', `its first line is ${shown(stream.firstLine)}, not ": open"`);
      rule(first.kind === 'comment', 'it begins with a frame, not a comment');
    },
  },
  {
    id: 'form-a.reply-frame',
    spec: '4.2 GET /v1/events rule 2',
    title: 'each reply is one frame: one data line of compact JSON, task_id in it, session_id echoed exactly',
    async run(context, scope) {
      // A session id a host might be tempted to normalise: spaces, a quote, a slash, a non-ASCII letter.
      const { session, stream } = await openSession(context, scope, 'frame', ' "Ünïcode"/x');
      const task = await sendTask(context, scope, session, 'hello from the conformance kit');
      const { progress, terminal } = await untilTerminal(context, stream, task);
      for (const reply of [...progress, terminal]) {
        const { frame, body } = reply;
        rule(frame.data.length === 1, `a reply frame has ${frame.data.length} data lines, not 1`);
        rule(isCompactJson(frame.data[0]!), `a reply's data is not compact JSON (whitespace outside its strings): ${shown(frame.data[0])}`);
        rule(body.session_id === session, `a reply's session_id is ${shown(body.session_id)}, not ${shown(session)} as sent`);
        rule(body.task_id === task, `a reply's task_id is ${shown(body.task_id)}`);
      }
      rule(TERMINAL.has(terminal.body.status as string), `the terminal reply's status is ${shown(terminal.body.status)}`);
      if (terminal.body.status === 'message') {
        rule(
          typeof terminal.body.message_id === 'string' && terminal.body.message_id !== '',
          'a message reply has no message_id (spec 2.5)',
        );
        rule(typeof terminal.body.reply_text === 'string', 'a message reply has no reply_text (spec 2.5)');
      }
    },
  },
  {
    id: 'form-a.ids',
    spec: '4.2 GET /v1/events rule 3',
    title: 'terminal replies carry an id {epoch}:{generation}:{seq}, increasing; progress frames carry none',
    needs: ['script-agent'],
    async run(context, scope) {
      const { session, stream } = await openSession(context, scope, 'ids');
      const script = scriptText({ typing: 'working' }, { tool_call: 'looking' }, { message: 'done' });
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1) {
        const task = await sendTask(context, scope, session, script);
        const { progress, terminal } = await untilTerminal(context, stream, task);
        rule(progress.length > 0, `the script's typing and tool_call frames did not arrive before task ${task}'s reply`);
        for (const reply of progress)
          rule(reply.frame.id === undefined, `a ${shown(reply.body.status)} frame carries id ${shown(reply.frame.id)}`);
        const id = terminal.frame.id;
        rule(id !== undefined && EVENT_ID.test(id), `a terminal reply's id is ${shown(id)}, not {epoch}:{generation}:{seq}`);
        ids.push(id);
      }
      const parts = ids.map((id) => EVENT_ID.exec(id)!);
      for (let i = 1; i < parts.length; i += 1) {
        const [before, after] = [parts[i - 1]!, parts[i]!];
        rule(
          before[1] === after[1] && before[2] === after[2],
          `one process's ids of one session changed epoch or generation: ${ids.join(', ')}`,
        );
        rule(Number(after[3]) > Number(before[3]), `ids do not increase: ${ids.join(', ')}`);
      }
    },
  },
  {
    id: 'form-a.keep-alive',
    spec: '4.2 GET /v1/events rule 6',
    title: 'an idle stream gets the comment `: keep-alive` about every keep-alive interval',
    async run(context, scope) {
      const { stream } = await openSession(context, scope, 'keepalive');
      const started = performance.now();
      // "About" every interval: half as long again, and a second for a busy machine's timers.
      const bound = context.keepaliveMs * 1.5 + 1_000;
      for (;;) {
        const item = await stream.next(Math.max(0, started + bound - performance.now()), `a keep-alive within ${Math.round(bound)} ms`);
        if (item.kind === 'comment' && item.text === 'keep-alive') return;
      }
    },
  },
  {
    id: 'form-a.reader-cap',
    spec: '4.2 GET /v1/events rule 8',
    title: 'a reader over the per-session cap is refused with 429',
    async run(context, scope) {
      const session = newSession(context, 'readers');
      for (let i = 1; i <= context.maxReaders; i += 1) {
        const { response } = await openEvents(context, scope, session);
        if (response.status === 429) return;
        rule(response.status === 200, `reader ${i} of one session was answered ${response.status}, neither 200 nor 429`);
      }
      rule(false, `${context.maxReaders} readers of one session were all let in (a larger cap: --max-readers N)`);
    },
  },
  {
    id: 'form-a.progress-live-only',
    spec: '4.2 GET /v1/events rule 4',
    title: 'progress is never replayed: a reconnect after a cursor gets terminal replies only',
    needs: ['script-agent'],
    async run(context, scope) {
      const { session, stream } = await openSession(context, scope, 'live-only');
      const [first] = await settledTasks(context, scope, stream, session, 1);
      const script = scriptText({ typing: 'working' }, { message: 'after progress' });
      await settledTasks(context, scope, stream, session, 2, () => script);
      const again = await openedStream(context, scope, session, first!.frame.id);
      for (let i = 0; i < 2; i += 1) {
        const frame = await again.nextFrame(context.replyMs, 'a replayed reply');
        const body = dataObject(frame);
        rule(!PROGRESS.has(body.status as string), `a ${shown(body.status)} frame was replayed`);
      }
    },
  },
];

/**
 * Form A host checks that need the host's agent to do something on purpose (spec 4.2 `POST /v1/incoming`,
 * 6.3, 8): they send the `script` test agent's steps (docs/conformance.md), so the host must run an agent
 * that follows them (`--script-agent`).
 */
import { pause } from './arrivals.js';
import { rule, shown, type Check } from './check.js';
import { openSession, scriptText, sendIncoming, sendTask, untilTerminal, type FormAHostContext } from './form-a-wire.js';

/** Spec 8: a reply is at most 256 KiB. */
const MAX_REPLY_BYTES = 256 * 1024;

export const FORM_A_INCOMING_CHECKS: readonly Check<FormAHostContext>[] = [
  {
    id: 'form-a.reply-too-large',
    spec: '8 single reply size',
    title: 'a reply over 256 KiB is replaced by an errored reply with error_code reply_too_large, which settles the task',
    needs: ['script-agent'],
    async run(context, scope) {
      const { session, stream } = await openSession(context, scope, 'large');
      const task = await sendTask(context, scope, session, scriptText({ message_bytes: MAX_REPLY_BYTES + 1_024 }));
      const { terminal } = await untilTerminal(context, stream, task);
      rule(
        terminal.body.status === 'errored' && terminal.body.error_code === 'reply_too_large',
        `the task's reply is ${shown(terminal.body)}, not errored / reply_too_large`,
      );
      rule(terminal.frame.id !== undefined, 'the errored reply that replaced it has no id: it must enter the backlog as a terminal reply');
    },
  },
  {
    id: 'form-a.reply-within-size',
    spec: '8 single reply size',
    title: 'a reply well within 256 KiB arrives whole',
    needs: ['script-agent'],
    async run(context, scope) {
      const { session, stream } = await openSession(context, scope, 'within');
      const bytes = 200 * 1024;
      const task = await sendTask(context, scope, session, scriptText({ message_bytes: bytes }));
      const { terminal } = await untilTerminal(context, stream, task);
      rule(terminal.body.status === 'message', `the task's reply has status ${shown(terminal.body.status)}, not message`);
      const text = terminal.body.reply_text;
      rule(
        typeof text === 'string' && text.length === bytes,
        `its reply_text has ${typeof text === 'string' ? text.length : 'no'} characters, not ${bytes}`,
      );
    },
  },
  {
    id: 'form-a.session-ended',
    spec: '4.2 POST /v1/incoming rule 1',
    title: 'a message for a session that has ended is answered {ok: true, ignored: true, reason: "session_ended"}',
    needs: ['script-agent'],
    async run(context, scope) {
      const { session, stream } = await openSession(context, scope, 'ended');
      const task = await sendTask(context, scope, session, scriptText({ message: 'goodbye' }, { end_session: true }));
      await untilTerminal(context, stream, task);
      // The agent ends the session after its reply: the host may take a moment to log that.
      const deadline = performance.now() + context.replyMs;
      let answer: Awaited<ReturnType<typeof sendIncoming>>;
      do {
        answer = await sendIncoming(context, scope, { session_id: session, task_id: `late-${Date.now()}`, text: 'are you there?' });
        const body = answer.body as Record<string, unknown> | undefined;
        if (body?.ignored === true) {
          rule(body.ok === true && body.reason === 'session_ended', `the answer is ${shown(body)}`);
          return;
        }
        await pause(100, scope.signal);
      } while (performance.now() < deadline);
      rule(false, `a message after the session ended was answered ${answer.status} ${shown(answer.text)}`);
    },
  },
];

/**
 * The Form B host's checks (spec 4.3, 4.5, 2.5, 3.2), the kit playing the client's callback listener
 * (callback-listener.ts): one `message` per thing said, in order, `typing`, `session_id` echoed, which
 * answers are retried and which are not, and a callback URL the host must refuse. Every check but the
 * last needs the script agent: the agent must say several things on purpose.
 */
import { randomUUID } from 'node:crypto';
import { pause } from './arrivals.js';
import { rule, shown, type Check, type CheckScope } from './check.js';
import type { Callback, CallbackListener, CallbackPost } from './callback-listener.js';
import { newSession, scriptText, sendIncoming, type HostContext } from './form-a-wire.js';

export interface FormBHostContext extends HostContext {
  readonly listener: CallbackListener;
}

/** How long the kit waits for a retry that must not come: past the reference backoff's first three waits (8). */
const NO_RETRY_MS = 2_500;

/** A user message with a callback block (PROTOCOL.md 1.2) to a callback of its own; the session and task it made. */
async function converse(context: FormBHostContext, scope: CheckScope, text: string, callback: Callback, sessionExtra = '') {
  const session_id = newSession(context, 'b', sessionExtra);
  const task_id = randomUUID();
  scope.defer(() => context.listener.forget(callback));
  const answer = await sendIncoming(context, scope, { session_id, task_id, text, callback: { url: callback.url, token: callback.token } });
  rule(
    answer.status >= 200 && answer.status < 300,
    `POST /v1/incoming with a loopback callback answered ${answer.status}: ${shown(answer.text)}`,
  );
  return { session_id, task_id };
}

const messages = (deliveries: readonly CallbackPost[]) =>
  deliveries.filter((delivery) => (delivery.body as { status?: unknown })?.status === 'message');
const messageIds = (deliveries: readonly CallbackPost[]) =>
  messages(deliveries).map((delivery) => (delivery.body as { message_id?: unknown }).message_id);

export const FORM_B_HOST_CHECKS: readonly Check<FormBHostContext>[] = [
  {
    id: 'form-b.messages',
    spec: '4.5 rule 3',
    title: 'one message POST per thing the agent says, each with its own message_id, session_id echoed, the callback token as Bearer',
    needs: ['script-agent'],
    async run(context, scope) {
      const callback = context.listener.callback();
      const { session_id, task_id } = await converse(
        context,
        scope,
        scriptText({ message: 'one' }, { message: 'two' }),
        callback,
        ' "Ünï"/x',
      );
      const got = messages(await callback.until((d) => messages(d).length >= 2, context.replyMs, 'two messages'));
      for (const delivery of got) {
        rule(delivery.method === 'POST', `a reply came as ${delivery.method}`);
        rule(delivery.path === `/tasks/${task_id}`, `a reply was posted to ${shown(delivery.path)}, not /tasks/${task_id}`);
        rule(delivery.authorization === `Bearer ${callback.token}`, `a reply's Authorization is ${shown(delivery.authorization)}`);
        rule(
          (delivery.body as { session_id?: unknown }).session_id === session_id,
          `a reply's session_id is ${shown((delivery.body as { session_id?: unknown }).session_id)}, not ${shown(session_id)}`,
        );
      }
      const texts = got.map((delivery) => (delivery.body as { reply_text?: unknown }).reply_text);
      rule(texts.join() === 'one,two', `the messages' reply_text are ${shown(texts)}, not ["one","two"]`);
      const ids = messageIds(got);
      rule(
        ids.every((id) => typeof id === 'string' && id !== '') && new Set(ids).size === 2,
        `message_ids ${shown(ids)} are not two distinct ids`,
      );
    },
  },
  {
    id: 'form-b.order',
    spec: '4.5 rule 3',
    title: 'what the agent says arrives in the order it said it',
    needs: ['script-agent'],
    async run(context, scope) {
      const callback = context.listener.callback();
      const said = ['1', '2', '3', '4', '5'];
      await converse(context, scope, scriptText(...said.map((message) => ({ message }))), callback);
      const got = messages(await callback.until((d) => messages(d).length >= said.length, context.replyMs, `${said.length} messages`));
      const texts = got.map((delivery) => (delivery.body as { reply_text?: unknown }).reply_text);
      rule(texts.join() === said.join(), `the messages arrived as ${shown(texts)}`);
    },
  },
  {
    id: 'form-b.typing',
    spec: '2.5 per-status effects (Form B)',
    title: 'typing is posted with its label',
    needs: ['script-agent'],
    async run(context, scope) {
      const callback = context.listener.callback();
      await converse(context, scope, scriptText({ typing: 'working on it' }, { message: 'done' }), callback);
      const got = await callback.until((d) => messages(d).length >= 1, context.replyMs, 'the message after typing');
      const typing = got.find((delivery) => (delivery.body as { status?: unknown }).status === 'typing');
      rule(typing !== undefined, `no typing arrived before the message: ${shown(got.map((d) => d.body))}`);
      rule(
        (typing.body as { label?: unknown }).label === 'working on it',
        `typing's label is ${shown((typing.body as { label?: unknown }).label)}`,
      );
    },
  },
  {
    id: 'form-b.retried',
    spec: '4.3 rule 5',
    title: 'a reply answered 408, 425, 429 or 5xx is posted again, the same message',
    needs: ['script-agent'],
    async run(context, scope) {
      const callback = context.listener.callback();
      // One message at a time: each takes three attempts.
      callback.answers.push(408, 429, 200, 425, 503);
      await converse(context, scope, scriptText({ message: 'first' }, { message: 'second' }), callback);
      const got = messages(await callback.until((d) => messages(d).length >= 6, context.replyMs * 2, 'each message three times'));
      const texts = got.slice(0, 6).map((delivery) => (delivery.body as { reply_text?: unknown }).reply_text);
      rule(texts.join() === 'first,first,first,second,second,second', `the attempts carried ${shown(texts)}`);
      const ids = messageIds(got.slice(0, 6));
      rule(
        ids[0] === ids[1] && ids[1] === ids[2] && ids[3] === ids[4] && ids[4] === ids[5],
        `a retry changed its message_id: ${shown(ids)}`,
      );
    },
  },
  {
    id: 'form-b.not-retried',
    spec: '4.3 rule 5',
    title: 'a reply answered with a redirect or another 4xx is not posted again, and the redirect is not followed',
    needs: ['script-agent'],
    async run(context, scope) {
      for (const status of [400, 404, 307]) {
        const callback = context.listener.callback();
        callback.answers.push(status);
        await converse(context, scope, scriptText({ message: `answered ${status}` }), callback);
        await callback.until((d) => messages(d).length >= 1, context.replyMs, 'the message');
        await pause(NO_RETRY_MS, scope.signal);
        const followed = callback.deliveries.filter((delivery) => delivery.path.endsWith('/redirected'));
        rule(followed.length === 0, `the host followed the ${status}'s Location`);
        const again = messages(callback.deliveries).length - 1;
        rule(again === 0, `after a ${status}, the message was posted ${again} more times`);
      }
    },
  },
  {
    id: 'form-b.callback-refused',
    spec: 'PROTOCOL.md 3b.8',
    title: 'a callback URL neither loopback nor allowlisted is refused',
    async run(context, scope) {
      const answer = await sendIncoming(context, scope, {
        session_id: newSession(context, 'b'),
        task_id: randomUUID(),
        text: 'hello',
        // TEST-NET-1 (RFC 5737): no allowlist names it, and no packet to it goes anywhere.
        callback: { url: 'http://192.0.2.1:9/assistant', token: 'kit-token' },
      });
      rule(
        answer.status >= 400 && answer.status < 500,
        `a message with callback http://192.0.2.1:9/assistant was answered ${answer.status}, not refused`,
      );
    },
  },
];

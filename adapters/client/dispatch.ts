/**
 * Posting a Form A task (3.1 rule 1, 4.2): only once its session's stream is open, and again while the host
 * cannot be reached or is loaded (a 429 or 5xx), with the same `task_id`, after a backoff waited on the
 * client's clock. The host's answer moves the task: `pending` once accepted, `refused` with the host's
 * code otherwise. Browser-safe.
 */
import { clientTaskState } from '../../machines/client/client-task.js';
import { fullJitter } from '../../protocol/backoff.js';
import { ErrorBody, IncomingAccepted, IncomingIgnored } from '../../protocol/wire.js';
import { retryAfterMs, safeJson } from './answers.js';
import { sleep } from '../../engine/core/clock.js';
import type { FormASettings } from './form-a-options.js';
import type { SessionLink } from './session-link.js';
import { isOpen, type Task, type TaskFailed } from './task.js';

const POST_ATTEMPTS = 5;

/** Opens the subscription first (3.1), then posts the task, trying again while the host is unreachable. */
export async function dispatch(
  link: SessionLink,
  task: Task,
  text: string,
  systemPrelude: string | undefined,
  options: FormASettings,
): Promise<void> {
  const { session_id, task_id } = task.snapshot.context;
  const { clock } = options;
  const refuse = (code: string, message: string) => link.settle(task, { type: 'task.refused', code, message, at: clock.now() });
  try {
    await link.opened;
  } catch (error) {
    if (isOpen(task)) refuse((error as TaskFailed).reason ?? 'refused', (error as Error).message);
    return;
  }
  const body = JSON.stringify({ session_id, task_id, text, ...(systemPrelude === undefined ? {} : { system_prelude: systemPrelude }) });
  for (let attempt = 1; isOpen(task); attempt += 1) {
    let response: Response | undefined;
    try {
      response = await fetch(`${options.url}/v1/incoming`, {
        method: 'POST',
        headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
        body,
      });
    } catch {
      response = undefined;
    }
    if (!isOpen(task)) return;
    const json = response === undefined ? undefined : safeJson(await response.text());
    if (response !== undefined && response.ok) {
      const ignored = IncomingIgnored.safeParse(json);
      if (ignored.success) refuse('session_ended', 'the session has ended');
      else if (IncomingAccepted.safeParse(json).success && clientTaskState(task.snapshot) === 'sending') {
        link.settle(task, { type: 'task.accepted', at: clock.now() });
      }
      return;
    }
    // The same task_id again is the same task: a POST whose answer was lost is safe to send again.
    const transient = response === undefined || response.status === 429 || response.status >= 500;
    if (!transient || attempt >= POST_ATTEMPTS) {
      const error = ErrorBody.safeParse(json);
      const code = error.success ? error.data.error.code : response === undefined ? 'unreachable' : `http_${response.status}`;
      refuse(code, error.success ? error.data.error.message : 'the host could not be reached');
      return;
    }
    const wait = (response === undefined ? undefined : retryAfterMs(response, clock)) ?? fullJitter(attempt + 1, options.random);
    await sleep(clock, wait, link.signal);
  }
}

/**
 * The plugin-job statechart, model-based (model.ts): each transition driven through a real plugin against
 * a fake backend on loopback that holds every `running` and `result` POST until the test answers it, and a
 * reasoner that answers when the test says. One fresh plugin, backend and job a path; what the test answers
 * (200, 403, 409, 422, a 503 whose Retry-After passes the deadline), a second send of the job, a restart
 * of the plugin and the reasoner's word make each event happen. After each step the plugin's log must
 * hold the event for the job, and the plugin's status the job's stage.
 *
 * A finished job is told apart by its outcome, a result or a failure: only a result the backend refuses
 * (422) becomes a failure to post instead, so the walk needs to know which it holds.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { Plugin } from '../../adapters/plugin/index.js';
import type { Reasoner } from '../../adapters/reasoners/reasoner.js';
import { dotPath } from '../../machines/core/state-value.js';
import type { PluginJobEvent } from '../../machines/reasoning/plugin-job-events.js';
import { pluginJobMachine, pluginJobStage, type PluginJobSnapshot } from '../../machines/reasoning/plugin-job.js';
import { FakeBackend, INTEGRATION, RELAY_TOKEN, makeJob, type Scripted } from '../plugin/fake-backend.js';
import { readEvents, tempDir } from '../support/host.js';
import { describeModel, untilLogged } from './model.js';

const RESULT = { insights: [{ text: 'the budget is set', kind: 'fact', confidence: 0.9 }] };
/** Later than any deadline here: the plugin gives up at once rather than wait it out. */
const PAST_THE_DEADLINE: Scripted = { status: 503, retryAfter: 3_600 };

/** A reasoner whose every run waits for the test's `answer`; a stopping plugin cuts it off. */
function gated(): Reasoner & { readonly runs: Array<(outcome: Record<string, unknown> | Error) => void> } {
  const runs: Array<(outcome: Record<string, unknown> | Error) => void> = [];
  return {
    name: 'gated',
    runs,
    reason: (request) =>
      new Promise((resolve, reject) => {
        runs.push((outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)));
        request.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      }),
  };
}

interface Subject {
  readonly backend: FakeBackend;
  readonly db: string;
  readonly job: Record<string, unknown>;
  readonly id: string;
  readonly reasoner: ReturnType<typeof gated>;
  plugin: Plugin;
  readonly seen: Map<string, number>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function startPlugin(backend: FakeBackend, db: string, reasoner: Reasoner): Promise<Plugin> {
  const plugin = new Plugin({
    backendUrl: backend.url,
    integrationId: INTEGRATION,
    relayToken: RELAY_TOKEN,
    reasoner,
    db,
    providerKind: 'test-provider',
    stopGraceMs: 0,
  });
  await plugin.start();
  await backend.until(() => plugin.status().stream === 'open', 'the stream');
  return plugin;
}

/** Answers the job's held POST to `route` once the plugin has made it. */
async function answer(subject: Subject, route: 'running' | 'result', scripted: Scripted): Promise<void> {
  const { backend, id } = subject;
  const at = () => backend.held.findIndex((held) => held.job_id === id && held.route === route);
  await backend.until(() => at() >= 0, `the ${route} POST of ${id}`);
  backend.held.splice(at(), 1)[0]!.answer(scripted);
}

/** What brings the job to its next `running` POST from where it rests: a received job has made it; a refused one is sent again; a started one is taken up by a new start. */
async function toRunning(subject: Subject, from: AnyMachineSnapshot): Promise<void> {
  const stage = pluginJobStage(from as PluginJobSnapshot);
  if (stage === 'refused') subject.backend.send(subject.job);
  if (stage === 'started') {
    await subject.plugin.stop();
    subject.plugin = await startPlugin(subject.backend, subject.db, subject.reasoner);
  }
}

async function reasonerAnswers(subject: Subject, outcome: Record<string, unknown> | Error): Promise<void> {
  await subject.backend.until(() => subject.reasoner.runs.length > 0, 'the reasoner to run');
  subject.reasoner.runs.shift()!(outcome);
}

const outcomeKind = (outcome: unknown) => ('result' in (outcome as object) ? 'result' : 'error');

describeModel<Subject, PluginJobEvent>('plugin-job', {
  machine: pluginJobMachine,
  input: { type: 'plugin.job_received', job_id: 'j', job: { job_id: 'j' }, at: 0 },
  events: [
    { type: 'plugin.job_started', job_id: 'j', at: 1 },
    { type: 'plugin.job_refused', job_id: 'j', at: 2 },
    { type: 'plugin.job_finished', job_id: 'j', outcome: { result: RESULT }, at: 3 },
    { type: 'plugin.job_finished', job_id: 'j', outcome: { error: { code: 'reasoner_error', message: 'no' } }, at: 4 },
    { type: 'plugin.job_closed', job_id: 'j', reason: 'posted', status: 200, at: 5 },
  ],
  stateKey: (snapshot) => {
    const state = dotPath(snapshot.value);
    return state === 'open.finished' ? `${state} (${outcomeKind((snapshot as PluginJobSnapshot).context.outcome)})` : state;
  },
  eventKey: (event) => (event.type === 'plugin.job_finished' ? `${event.type} (${outcomeKind(event.outcome)})` : event.type),
  unreachable: {
    'open.received plugin.job_finished (result)':
      'a result comes from a run, and a job runs only once the backend accepted it (plugin.job_started)',
    'open.refused plugin.job_finished (result)':
      'a result comes from a run, and a job runs only once the backend accepted it (plugin.job_started)',
    'open.finished (result) plugin.job_finished (result)':
      'a finished job never runs again: its next outcome is only the failure a refused result becomes',
    'open.finished (error) plugin.job_finished (result)': 'a finished job never runs again',
    'open.finished (error) plugin.job_finished (error)':
      'a failure the backend refuses is closed, rejected; only a result is replaced (invalid_result)',
  },
  // A plugin of its own on a backend of its own (a path may restart it), and a job it received: its `running` POST held.
  async start() {
    const backend = await FakeBackend.start();
    backend.hold = true;
    const dir = tempDir();
    const db = join(dir, 'plugin.db');
    const reasoner = gated();
    const job = makeJob(Date.now(), {}, 600_000);
    const subject: Subject = {
      backend,
      db,
      job,
      id: job.job_id as string,
      reasoner,
      plugin: await startPlugin(backend, db, reasoner),
      seen: new Map(),
    };
    cleanups.push(async () => {
      // Closing the backend drops the held POSTs, so that the plugin's stop need not wait for them.
      await Promise.all([subject.plugin.stop(), backend.close()]);
      rmSync(dir, { recursive: true, force: true });
    });
    backend.send(job);
    await backend.until(
      () => backend.held.some((held) => held.job_id === subject.id && held.route === 'running'),
      'the first running POST',
    );
    await untilLogged({ db, name: subject.id, about: (event) => event.job_id === subject.id }, 'plugin.job_received', subject.seen);
    expect(subject.plugin.status().jobs[subject.id]).toBe('received');
    return subject;
  },
  drivers: {
    'plugin.job_started': async (subject, from) => {
      await toRunning(subject, from);
      await answer(subject, 'running', { status: 200 });
    },
    // This plugin is refused (PROTOCOL.md 6e.7).
    'plugin.job_refused': async (subject, from) => {
      await toRunning(subject, from);
      await answer(subject, 'running', { status: 403 });
    },
    'plugin.job_finished': async (subject, from, event) => {
      const stage = pluginJobStage(from as PluginJobSnapshot);
      const { outcome } = event as Extract<PluginJobEvent, { type: 'plugin.job_finished' }>;
      if (stage === 'started') return reasonerAnswers(subject, outcomeKind(outcome) === 'result' ? RESULT : new Error('no'));
      // The result is refused: it is reported as a failure instead.
      if (stage === 'finished')
        return answer(subject, 'result', { status: 422, body: { error: { code: 'invalid_result', message: 'no' } } });
      // The backend cannot be told the job runs before its deadline.
      await toRunning(subject, from);
      await answer(subject, 'running', PAST_THE_DEADLINE);
    },
    'plugin.job_closed': async (subject, from) => {
      if (pluginJobStage(from as PluginJobSnapshot) === 'finished') return answer(subject, 'result', { status: 200 });
      // The job ended on the backend otherwise.
      await toRunning(subject, from);
      await answer(subject, 'running', { status: 409 });
    },
  },
  async check(subject, event, to) {
    await untilLogged({ db: subject.db, name: subject.id, about: (logged) => logged.job_id === subject.id }, event.type, subject.seen);
    expect(subject.plugin.status().jobs[subject.id], `${subject.id} after ${event.type}`).toBe(pluginJobStage(to as PluginJobSnapshot));
    if (event.type !== 'plugin.job_finished') return;
    const finished = readEvents(subject.db)
      .filter((logged) => logged.type === event.type && logged.job_id === subject.id)
      .at(-1)!;
    expect(outcomeKind(finished.outcome), `what the job finished with: ${JSON.stringify(finished.outcome)}`).toBe(
      outcomeKind(event.outcome),
    );
  },
});

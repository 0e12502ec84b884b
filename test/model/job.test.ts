/**
 * The reasoning-job statechart, model-based (model.ts): each transition driven through a real backend
 * over loopback HTTP, one fresh job a path, as a client, a plugin or time would make it happen; after
 * each step the log must hold the event for the job, and the client's view of the job its state.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { jobMachine, jobState, type JobSnapshot } from '../../machines/reasoning/job.js';
import type { JobEvent } from '../../machines/reasoning/job-events.js';
import { heartbeatOf, serveBackend, type ServedBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { request } from '../support/http.js';
import { SseConnection } from '../support/sse.js';
import { describeModel, untilLogged } from './model.js';

const LEASE_MS = 10_000;
const DEADLINE_MS = 3_600_000;
const RESULT = { insights: [{ text: 'the budget is set', kind: 'fact', confidence: 0.9 }] };
const PAYLOAD = { session_id: 'call', transcript: [{ speaker: 'a', text: 'our budget is set' }] };
const J = { job_id: 'j', integration_id: 'i' };

const clock = new SimulatedClock();
let served: ServedBackend;
let base = '';
let client = '';
let plugin = '';
/** The plugin's stream, when one is open. */
let stream: SseConnection | undefined;

beforeAll(async () => {
  // The lease is two heartbeat intervals, the least the backend takes (PROTOCOL.md 6e.25).
  served = await serveBackend({ config: { clock, leaseMs: LEASE_MS, heartbeatIntervalMs: LEASE_MS / 2 } });
  const created = await served.backend.integrations.create('assistant-relay');
  if ('refused' in created) throw new Error(created.refused.message);
  base = `${served.url}/api/v1/assistant/integrations/${created.integration_id}`;
  client = created.client_token;
  plugin = created.relay_token;
});

afterAll(async () => {
  stream?.close();
  await served?.stop();
});

async function closeStream(): Promise<void> {
  if (stream === undefined) return;
  stream.close();
  stream = undefined;
  // The backend hears of it a moment later.
  await new Promise((resolve) => setTimeout(resolve, 30));
}

/** The job, and how many of each event type the log had for it before the step being checked. */
interface Job {
  readonly id: string;
  readonly seen: Map<string, number>;
}

const posted = (path: string, token: string, body?: unknown) =>
  request(path, { token, method: 'POST', ...(body === undefined ? {} : { body }) });

describeModel<Job, JobEvent>('job', {
  machine: jobMachine,
  input: {
    type: 'job.created',
    ...J,
    purpose: 'live_analysis',
    payload: {},
    byo: false,
    response_schema: {},
    provider_kind: 'assistant-relay',
    deadline_at: 100,
    at: 0,
  },
  events: [
    { type: 'job.delivered', ...J, delivery: 1, seq: 1, lease_until: 2, at: 1 },
    { type: 'job.started', ...J, lease_until: 3, at: 2 },
    { type: 'job.renewed', ...J, lease_until: 4, at: 3 },
    { type: 'job.released', ...J, at: 4 },
    { type: 'job.completed', ...J, result: {}, at: 5 },
    { type: 'job.failed', ...J, error: { code: 'reasoner_failed', message: 'no' }, at: 6 },
    { type: 'job.expired', ...J, at: 7 },
    { type: 'job.cancelled', ...J, at: 8 },
  ] as JobEvent[],
  async start() {
    // Made while no stream is open, so that it waits in `created`.
    await closeStream();
    const id = randomUUID();
    expect(
      (
        await request(`${base}/jobs`, {
          token: client,
          body: { job_id: id, purpose: 'live_analysis', payload: PAYLOAD, deadline_ms: DEADLINE_MS },
        })
      ).status,
    ).toBe(201);
    return { id, seen: new Map() };
  },
  drivers: {
    // A new stream sends every job waiting or on its way.
    'job.delivered': async () => {
      await closeStream();
      stream = await SseConnection.open(`${base}/stream`, { token: plugin });
      expect(stream.status).toBe(200);
    },
    'job.started': async ({ id }) => expect((await posted(`${base}/jobs/${id}/running`, plugin)).status).toBe(200),
    // Half a lease on: a renewal sooner than a third of one is not logged (PROTOCOL.md 6e.2).
    'job.renewed': async ({ id }) => {
      clock.increment(LEASE_MS / 2);
      expect((await request(`${base}/heartbeat`, { token: plugin, body: heartbeatOf({ running_job_ids: [id] }) })).status).toBe(200);
    },
    // No stream, and the lease runs out.
    'job.released': async () => {
      await closeStream();
      clock.increment(LEASE_MS + 1);
    },
    'job.completed': async ({ id }) => expect((await posted(`${base}/jobs/${id}/result`, plugin, { result: RESULT })).status).toBe(200),
    'job.failed': async ({ id }) =>
      expect((await posted(`${base}/jobs/${id}/result`, plugin, { error: { code: 'reasoner_failed', message: 'no' } })).status).toBe(200),
    'job.expired': async () => clock.increment(DEADLINE_MS + 1),
    'job.cancelled': async ({ id }) => expect((await posted(`${base}/jobs/${id}/cancel`, client)).status).toBe(200),
  },
  async check(job, event, to) {
    await untilLogged({ db: served.db, name: job.id, about: (event) => event.job_id === job.id }, event.type, job.seen);
    const view = (await request(`${base}/jobs/${job.id}`, { token: client })).body as { state: string };
    expect(view.state, `job ${job.id} after ${event.type}`).toBe(jobState(to as JobSnapshot));
  },
});

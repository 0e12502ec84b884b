/**
 * Model-based test of the reasoning-job statechart (issue 13): `xstate/graph` walks the machine itself
 * and yields every transition it has (state, event, next state); each is driven through the real backend
 * over loopback HTTP along the shortest path to its state, one fresh job a path: what a client or a plugin
 * does, or how far the backend's simulated clock moves, to make that event happen. After every step the
 * log must hold that event for the job, and the client's view of the job must be in the machine's state.
 * The paths are generated, not listed: a transition added to the machine without a way to drive it here
 * fails the coverage check, and one the adapters do not follow fails its path.
 */
import { randomUUID } from 'node:crypto';
import { getAdjacencyMap, getShortestPaths } from 'xstate/graph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobMachine, jobState, type JobSnapshot } from '../../src/machines/job.js';
import type { JobEvent } from '../../src/machines/job-events.js';
import { heartbeatOf, serveBackend, type ServedBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { request } from '../support/http.js';
import { readEvents } from '../support/log.js';
import { SseConnection } from '../support/sse.js';

const LEASE_MS = 10_000;
const DEADLINE_MS = 3_600_000;
const RESULT = { insights: [{ text: 'the budget is set', kind: 'fact', confidence: 0.9 }] };
const PAYLOAD = { session_id: 'call', transcript: [{ speaker: 'a', text: 'our budget is set' }] };

/** One event of each type, for the walk (their payloads only feed the context, which the walk ignores). */
const J = { job_id: 'j', integration_id: 'i' };
const WALK_EVENTS: JobEvent[] = [
  { type: 'job.delivered', ...J, delivery: 1, seq: 1, lease_until: 2, at: 1 },
  { type: 'job.started', ...J, lease_until: 3, at: 2 },
  { type: 'job.renewed', ...J, lease_until: 4, at: 3 },
  { type: 'job.released', ...J, at: 4 },
  { type: 'job.completed', ...J, result: {}, at: 5 },
  { type: 'job.failed', ...J, error: { code: 'reasoner_failed', message: 'no' }, at: 6 },
  { type: 'job.expired', ...J, at: 7 },
  { type: 'job.cancelled', ...J, at: 8 },
] as JobEvent[];
const WALK = {
  input: { type: 'job.created', ...J, purpose: 'live_analysis', payload: {}, byo: false, response_schema: {}, provider_kind: 'assistant-relay', deadline_at: 100, at: 0 },
  events: WALK_EVENTS,
  // A state is its value: the context (counts, times) would make every step a new state.
  serializeState: (snapshot: JobSnapshot) => JSON.stringify(snapshot.value),
  serializeEvent: (event: JobEvent) => event.type,
} as never;

const stateKey = (snapshot: JobSnapshot) => JSON.stringify(snapshot.value);

/** Every transition the machine has: from a state, an event it takes there, and where it goes. */
function transitions(): Array<{ readonly from: JobSnapshot; readonly event: JobEvent; readonly to: JobSnapshot }> {
  const adjacency = getAdjacencyMap(jobMachine, WALK) as Record<string, { state: JobSnapshot; transitions: Record<string, { event: JobEvent; state: JobSnapshot }> }>;
  return Object.values(adjacency).flatMap(({ state, transitions: next }) =>
    state.status !== 'active' ? [] : Object.values(next).filter(({ event }) => state.can(event as never)).map(({ event, state: to }) => ({ from: state, event, to })),
  );
}

const clock = new SimulatedClock();
let served: ServedBackend;
let base = '';
let client = '';
let plugin = '';
let stream: SseConnection | undefined;

beforeAll(async () => {
  served = await serveBackend({ config: { clock, leaseMs: LEASE_MS } });
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

function eventsOf(jobId: string) {
  return readEvents(served.db).filter((event) => event.job_id === jobId);
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (const since = Date.now(); !check(); await new Promise((resolve) => setTimeout(resolve, 10))) {
    if (Date.now() - since > 5_000) throw new Error(`timed out waiting for ${what}`);
  }
}

async function closeStream(): Promise<void> {
  if (stream === undefined) return;
  stream.close();
  stream = undefined;
  // The backend hears of it a moment later.
  await new Promise((resolve) => setTimeout(resolve, 30));
}

/** What makes each event happen to `jobId` on the real backend, given the state the machine says it is in. */
const DRIVERS: Record<JobEvent['type'], (jobId: string, from: JobSnapshot) => Promise<void>> = {
  'job.created': async () => {},
  // A new stream sends every job waiting or on its way again.
  'job.delivered': async () => {
    await closeStream();
    stream = await SseConnection.open(`${base}/stream`, { token: plugin });
    expect(stream.status).toBe(200);
  },
  'job.started': async (jobId) => {
    expect((await request(`${base}/jobs/${jobId}/running`, { token: plugin, method: 'POST' })).status).toBe(200);
  },
  'job.renewed': async (jobId) => {
    expect((await request(`${base}/heartbeat`, { token: plugin, body: heartbeatOf({ running_job_ids: [jobId] }) })).status).toBe(200);
  },
  // No stream, and the lease runs out.
  'job.released': async () => {
    await closeStream();
    clock.increment(LEASE_MS + 1);
  },
  'job.completed': async (jobId) => {
    expect((await request(`${base}/jobs/${jobId}/result`, { token: plugin, body: { result: RESULT } })).status).toBe(200);
  },
  'job.failed': async (jobId) => {
    expect((await request(`${base}/jobs/${jobId}/result`, { token: plugin, body: { error: { code: 'reasoner_failed', message: 'no' } } })).status).toBe(200);
  },
  'job.expired': async () => {
    clock.increment(DEADLINE_MS + 1);
  },
  'job.cancelled': async (jobId) => {
    expect((await request(`${base}/jobs/${jobId}/cancel`, { token: client, method: 'POST' })).status).toBe(200);
  },
};

/** Drives one step and checks that the log and the client's view followed the machine. */
async function drive(jobId: string, from: JobSnapshot, event: JobEvent, to: JobSnapshot): Promise<void> {
  const before = eventsOf(jobId).filter((logged) => logged.type === event.type).length;
  await DRIVERS[event.type](jobId, from);
  await until(() => eventsOf(jobId).filter((logged) => logged.type === event.type).length > before, `${event.type} of ${jobId} from ${stateKey(from)}`);
  const view = (await request(`${base}/jobs/${jobId}`, { token: client })).body as { state: string };
  expect(view.state, `${jobId} after ${event.type} from ${stateKey(from)}`).toBe(jobState(to));
}

const covered = { states: new Set<string>(), transitions: new Set<string>() };
const ALL = transitions();
const initial = getShortestPaths(jobMachine, WALK);

describe('the job statechart, driven through the backend over HTTP', () => {
  it.each(ALL.map((t) => [`${stateKey(t.from)} --${t.event.type}--> ${stateKey(t.to)}`, t] as const))('%s', async (_, transition) => {
    const path = initial.find((candidate) => stateKey(candidate.state as JobSnapshot) === stateKey(transition.from));
    expect(path, `a path to ${stateKey(transition.from)}`).toBeDefined();
    // A fresh job, made while no stream is open, so that it waits in `created`.
    await closeStream();
    const jobId = randomUUID();
    expect((await request(`${base}/jobs`, { token: client, body: { job_id: jobId, purpose: 'live_analysis', payload: PAYLOAD, deadline_ms: DEADLINE_MS } })).status).toBe(201);
    let at = jobMachine.resolveState({ value: { open: 'created' }, context: {} as never }) as JobSnapshot;
    covered.states.add(stateKey(at));
    for (const step of path!.steps.slice(1)) {
      await drive(jobId, at, step.event as JobEvent, step.state as JobSnapshot);
      covered.transitions.add(`${stateKey(at)} ${step.event.type}`);
      at = step.state as JobSnapshot;
      covered.states.add(stateKey(at));
    }
    await drive(jobId, at, transition.event, transition.to);
    covered.transitions.add(`${stateKey(at)} ${transition.event.type}`);
    covered.states.add(stateKey(transition.to));
  });

  it('covers every state and every transition of the machine', () => {
    const states = new Set(ALL.flatMap((t) => [stateKey(t.from), stateKey(t.to)]));
    const transitionKeys = new Set(ALL.map((t) => `${stateKey(t.from)} ${t.event.type}`));
    console.log(`model coverage, job: states ${covered.states.size}/${states.size}, transitions ${[...transitionKeys].filter((key) => covered.transitions.has(key)).length}/${transitionKeys.size}`);
    for (const state of states) expect(covered.states, `state ${state}`).toContain(state);
    for (const key of transitionKeys) expect(covered.transitions, `transition ${key}`).toContain(key);
  });
});

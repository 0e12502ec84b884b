/**
 * Property-based test of the reasoning job lifecycle (issue 13): fast-check generates what a client and a
 * plugin do to a handful of jobs on a backend relay over loopback HTTP (create with any deadline, cancel,
 * the plugin's running, result, error or a result that does not fit its purpose, the plugin's stream
 * dropped and opened again) and how far its simulated clock moves between them (deadlines and leases
 * fall due). In the end the clock moves past every deadline. Every job created must settle exactly once
 * (completed, failed, expired or cancelled), and its events must follow its statechart.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../support/clock.js';
import { heartbeatOf, serveBackend } from '../support/backend.js';
import { request } from '../support/http.js';
import { readBackendEvents } from '../support/log.js';
import { SseConnection } from '../support/sse.js';
import { eventually } from '../support/wait.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 25);
const SEED = process.env.PROPERTY_SEED === undefined ? 44 : Number(process.env.PROPERTY_SEED);
const PATH = process.env.PROPERTY_PATH;
const JOBS = [
  '1a2b3c4d-0000-4000-8000-000000000001',
  '1a2b3c4d-0000-4000-8000-000000000002',
  '1a2b3c4d-0000-4000-8000-000000000003',
  '1a2b3c4d-0000-4000-8000-000000000004',
];
const TERMINAL = new Set(['job.completed', 'job.failed', 'job.expired', 'job.cancelled']);

type Step =
  | { readonly kind: 'create'; readonly job: number; readonly deadline_ms: number }
  | { readonly kind: 'cancel'; readonly job: number }
  | { readonly kind: 'plugin'; readonly job: number; readonly act: 'running' | 'result' | 'error' | 'unfit result' }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'reconnect' };

const job = fc.nat(JOBS.length - 1);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('create' as const), job, deadline_ms: fc.integer({ min: 1_000, max: 120_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), job }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('plugin' as const),
      job,
      act: fc.constantFrom('running' as const, 'result' as const, 'error' as const, 'unfit result' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 90_000 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reconnect' as const }) },
);
const workloads = fc.array(step, { minLength: 1, maxLength: 20, size: 'large' });

const RESULT = { insights: [{ text: 'the budget is set', kind: 'fact', confidence: 0.9 }] };
const PAYLOAD = { session_id: 'call', transcript: [{ speaker: 'a', text: 'our budget is set' }] };

async function run(steps: readonly Step[]): Promise<void> {
  const clock = new SimulatedClock();
  const served = await serveBackend({ config: { clock } });
  const created = await served.backend.integrations.create('assistant-relay');
  if ('refused' in created) throw new Error(created.refused.message);
  const base = `${served.url}/api/v1/assistant/integrations/${created.integration_id}`;
  const client = { token: created.client_token };
  const plugin = { token: created.relay_token };
  const connect = async () => {
    const stream = await SseConnection.open(`${base}/stream`, plugin);
    expect(stream.status).toBe(200);
    expect((await request(`${base}/heartbeat`, { ...plugin, body: heartbeatOf() })).status).toBe(200);
    return stream;
  };
  let stream = await connect();
  try {
    for (const each of steps) {
      switch (each.kind) {
        case 'create': {
          const answer = await request(`${base}/jobs`, {
            ...client,
            body: { job_id: JOBS[each.job], purpose: 'live_analysis', payload: PAYLOAD, deadline_ms: each.deadline_ms },
          });
          // Created, the same job again, or another body under its id.
          expect([201, 200, 409]).toContain(answer.status);
          break;
        }
        case 'cancel':
          expect([200, 404, 409]).toContain((await request(`${base}/jobs/${JOBS[each.job]}/cancel`, { ...client, method: 'POST' })).status);
          break;
        case 'plugin': {
          const path = `${base}/jobs/${JOBS[each.job]}/${each.act === 'running' ? 'running' : 'result'}`;
          const body =
            each.act === 'running'
              ? undefined
              : each.act === 'result'
                ? { result: RESULT }
                : each.act === 'error'
                  ? { error: { code: 'reasoner_failed', message: 'no' } }
                  : { result: { insights: 'none' } };
          const answer = await request(path, { ...plugin, method: 'POST', ...(body === undefined ? {} : { body }) });
          expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(500);
          break;
        }
        case 'advance':
          clock.increment(each.ms);
          break;
        case 'reconnect':
          stream.close();
          stream = await connect();
          break;
      }
    }
    // Past every deadline (at most an hour): whatever is still open expires.
    clock.increment(2 * 60 * 60 * 1000);
    const settledAll = (events: Array<Record<string, unknown> & { type: string }>) => {
      const made = events.filter((event) => event.type === 'job.created').map((event) => event.job_id);
      return made.every((id) => events.some((event) => event.job_id === id && TERMINAL.has(event.type)));
    };
    await eventually('every job to settle', () => readBackendEvents(served.db), settledAll, { everyMs: 10 });
    const events = (await readBackendEvents(served.db)).filter((event) => typeof event.job_id === 'string');
    for (const id of new Set(events.map((event) => event.job_id as string))) {
      const mine = events.filter((event) => event.job_id === id);
      expect(mine[0]?.type, `job ${id} begins with its creation`).toBe('job.created');
      expect(
        mine.filter((event) => event.type === 'job.created'),
        `job ${id} created once`,
      ).toHaveLength(1);
      const terminal = mine.filter((event) => TERMINAL.has(event.type));
      expect(terminal, `job ${id} settles once`).toHaveLength(1);
      // Nothing happens to a job after it settled.
      expect(mine.at(-1), `job ${id} ends with its settlement`).toBe(terminal[0]);
    }
  } finally {
    stream.close();
    await served.stop();
  }
}

describe('reasoning jobs under random clients, plugins and clocks', () => {
  it(
    'every job created settles exactly once, and nothing happens to it after',
    async () => {
      await fc.assert(fc.asyncProperty(workloads, run), { numRuns: RUNS, seed: SEED, ...(PATH === undefined ? {} : { path: PATH }) });
    },
    30_000 + RUNS * 1_000,
  );
});

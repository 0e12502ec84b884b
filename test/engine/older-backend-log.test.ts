/**
 * A backend started on a log written while a `job_id` was the whole service's (job events in
 * `job:{job_id}`, a `backend.forgotten` naming jobs by id alone, maybe a format 1 snapshot, passed over): it folds to
 * the state it held, goes on with its open jobs, lets another integration take a job id the log already
 * has, and retention removes the older streams only once no job of that id is left.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { backendSeams } from '../../adapters/backend/seams.js';
import { ReasoningEngine } from '../../engine/reasoning/engine.js';
import { RETENTION_CHECK_MS } from '../../engine/core/retention.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobState } from '../../machines/reasoning/job.js';
import { EventLog } from '../../storage/event-log.js';
import { integrationCreated, jobCreated } from '../support/backend-events.js';
import { SimulatedClock } from '../support/clock.js';
import { tempDir } from '../support/host.js';
import { writeOlderBackendLog } from '../support/older-backend-log.js';
import { verifyLogFile } from '../support/verify-log.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 0, 10);
const C = 'c0000000-0000-4000-8000-00000000000c';
const D = 'd0000000-0000-4000-8000-00000000000d';
const X = '11111111-2222-4333-8444-555555555555';
const Z = '22222222-2222-4333-8444-555555555555';
const W = '33333333-2222-4333-8444-555555555555';

const integration = (integration_id: string) => integrationCreated(integration_id, T0 - 2 * DAY);
const created = (job_id: string, at: number, deadline_at: number) => jobCreated(C, job_id, at, { deadline_at });

/** C's job X, cancelled two days before the upgrade; C's job Z, open across it; C's job W, forgotten by the older retention (its events not yet removed). */
const OLDER: BackendEvent[] = [
  { type: 'backend.started', epoch: 'older', at: T0 - 2 * DAY },
  integration(C),
  integration(D),
  created(X, T0 - 2 * DAY, T0 - 2 * DAY + MINUTE),
  { type: 'job.cancelled', job_id: X, integration_id: C, at: T0 - 2 * DAY + 1 },
  created(W, T0 - 2 * DAY, T0 - 2 * DAY + MINUTE),
  { type: 'job.cancelled', job_id: W, integration_id: C, at: T0 - 2 * DAY + 2 },
  { type: 'backend.forgotten', job_ids: [W], pairing_ids: [], sent: {}, ended_before: T0 - 2 * DAY + 3, at: T0 - DAY },
  created(Z, T0 - 10 * MINUTE, T0 + 20 * MINUTE),
];

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(
  path: string,
  clock: SimulatedClock,
  reports: string[],
): Promise<{ backend: ReasoningEngine; stop: () => Promise<void> }> {
  const log = EventLog.open<BackendEvent>({ path, streamOf: backendStreamOf });
  const seams = backendSeams(log, { clock, onError: (error, context) => reports.push(`${context.what}: ${String(error)}`) });
  const backend = await ReasoningEngine.start(seams, { retentionMs: 7 * DAY });
  // Both closes are idempotent: a test may stop it before the cleanup does.
  const stop = () => backend.close().then(() => log.close());
  cleanups.push(stop);
  return { backend, stop };
}

/** Each stream's event types, as the log holds them now. */
function streams(path: string): Record<string, string[]> {
  const conn = new Database(path, { readonly: true });
  try {
    const all: Record<string, string[]> = {};
    for (const { stream, type } of conn.prepare('SELECT stream, type FROM events ORDER BY position').all() as Array<{
      stream: string;
      type: string;
    }>)
      (all[stream] ??= []).push(type);
    return all;
  } finally {
    conn.close();
  }
}

/**
 * Runs a retention pass at `at`: the clock is moved to an hour before (a pass then runs late, at its due
 * time, and arms the next an hour on once done), then on by the hour.
 */
async function retentionPassAt(clock: SimulatedClock, at: number): Promise<void> {
  clock.incrementTo(at - RETENTION_CHECK_MS);
  await new Promise((resolve) => setTimeout(resolve, 50));
  clock.increment(RETENTION_CHECK_MS);
}

/** Lets the engine's timers and commits run. */
async function settle(until: () => Promise<boolean>, what: string): Promise<void> {
  for (const since = Date.now(); !(await until()); await new Promise((resolve) => setTimeout(resolve, 5))) {
    if (Date.now() - since > 5_000) throw new Error(`timed out waiting for ${what}`);
  }
}

describe("a backend on a log from before job ids were each integration's", () => {
  it.each([{ snapshot: false }, { snapshot: true }])(
    'folds it and goes on (format 1 snapshot: $snapshot); retention removes each older stream once no job of its id is left',
    async ({ snapshot }) => {
      const dir = tempDir();
      cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
      const path = join(dir, 'backend.db');
      await writeOlderBackendLog(path, OLDER, { snapshot });
      const clock = new SimulatedClock(T0);
      const reports: string[] = [];
      const { backend, stop } = await start(path, clock, reports);
      const stateOf = async (integrationId: string, jobId: string) => {
        const job = await backend.committedJob(integrationId, jobId);
        return job === undefined ? undefined : jobState(job);
      };
      expect([await stateOf(C, X), await stateOf(C, Z), await stateOf(C, W), await stateOf(D, X)]).toEqual([
        'cancelled',
        'created',
        undefined,
        undefined,
      ]);

      // D takes the id of C's job: its own job, while C's stays as it was.
      const body = { job_id: X, purpose: 'capability_probe', payload: {}, byo: false, deadline_ms: HOUR } as const;
      expect((await backend.createJob(D, body)).outcome).toBe('created');
      expect((await backend.createJob(C, body)).outcome).toBe('conflict');
      // Z, open across the upgrade, expires at its deadline: its new events go to its new stream.
      clock.increment(20 * MINUTE);
      await settle(async () => (await stateOf(C, Z)) === 'expired', "Z's deadline");
      clock.increment(40 * MINUTE);
      await settle(async () => (await stateOf(D, X)) === 'expired', "D's X deadline");
      expect(streams(path)).toMatchObject({
        [`job:${X}`]: ['job.created', 'job.cancelled'],
        [`job:${Z}`]: ['job.created'],
        [`job:${C}:${Z}`]: ['job.expired'],
        [`job:${D}:${X}`]: ['job.created', 'job.expired'],
      });

      // Retention forgets C's X (settled over 7 days ago) but keeps its events under job:X: D's job X lives on in the projection.
      await retentionPassAt(clock, T0 + 5 * DAY + 2 * HOUR);
      await settle(async () => (await stateOf(C, X)) === undefined, "C's X forgotten");
      expect([await stateOf(D, X), streams(path)[`job:${X}`]]).toEqual(['expired', ['job.created', 'job.cancelled']]);

      // Once D's X and Z are forgotten too, no job of either id is left: their older streams go with their new ones.
      // A ticket that expires by then gives the service's partition a forgetting of its own, which stands for the older backend's.
      expect(await backend.pairings.issueTicket(MINUTE)).toMatchObject({ ticket: expect.any(String) });
      await retentionPassAt(clock, T0 + 7 * DAY + 2 * HOUR);
      await settle(async () => (await stateOf(D, X)) === undefined && (await stateOf(C, Z)) === undefined, "D's X and Z forgotten");
      await settle(
        async () =>
          !Object.keys(streams(path)).some((stream) => [`job:${X}`, `job:${Z}`, `job:${C}:${Z}`, `job:${D}:${X}`].includes(stream)),
        'their events removed',
      );
      // W was forgotten by the older backend, which left its events behind: the pass that prunes its forgetting event (once a newer one of the service's partition stands for it) removes them again (by its `job_ids`).
      expect(Object.keys(streams(path)).filter((stream) => stream.startsWith('job:'))).toEqual([]);
      // A format 1 snapshot is passed over, said once, and the log folded again.
      expect(reports).toEqual(snapshot ? [expect.stringContaining('not a backend snapshot of format 2')] : []);

      // A restart folds the same.
      await stop();
      const again = await start(path, new SimulatedClock(clock.now()), reports);
      expect([
        await again.backend.committedJob(C, X),
        await again.backend.committedJob(D, X),
        await again.backend.committedJob(C, Z),
      ]).toEqual([undefined, undefined, undefined]);
      expect((await again.backend.createJob(C, body)).outcome).toBe('created');
      await again.stop();
      expect(reports).toEqual(snapshot ? [expect.stringContaining('not a backend snapshot of format 2')] : []);
      await verifyLogFile(path);
    },
  );
});

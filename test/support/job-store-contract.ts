/**
 * What every `JobStore` must do, as a suite any store runs against itself: over the backend's embedded
 * SQLite log, and over a PostgreSQL log shared by nodes. A store is opened on a folder, so that a second
 * opening of the same folder is a restart.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Decision } from '../../machines/core/decider.js';
import { jobDecider, type JobCommand, type JobOutcome } from '../../machines/reasoning/job-decider.js';
import type { JobEvent } from '../../machines/reasoning/job-events.js';
import { jobState, type JobSnapshot } from '../../machines/reasoning/job.js';
import type { JobStore } from '../../engine/reasoning/job-store.js';
import { tempDir } from './host.js';

export interface OpenedJobStore {
  readonly store: JobStore;
  /** The job events the store handed to after-commit dispatch, in order. */
  readonly committed: readonly JobEvent[];
  close(): Promise<void>;
}

const INTEGRATION = 'b8a7c1f0-0000-4000-8000-000000000001';
const OTHER = 'b8a7c1f0-0000-4000-8000-000000000002';

/** A `live_analysis` job's create, due a minute after `at`. */
export function createCommand(job_id: string, integration_id = INTEGRATION, at = 1_000): JobCommand {
  return {
    type: 'create',
    job_id,
    integration_id,
    purpose: 'live_analysis',
    payload: { session_id: 's', transcript: [] },
    byo: false,
    response_schema: { type: 'object' },
    provider_kind: 'assistant-relay',
    deadline_at: at + 60_000,
    at,
  };
}

const decided = (command: JobCommand) => (job: JobSnapshot | undefined) => jobDecider.decide(command, job);

export function describeJobStore(name: string, open: (dir: string) => Promise<OpenedJobStore>): void {
  describe(`JobStore contract: ${name}`, () => {
    const opened: OpenedJobStore[] = [];
    const dirs = new Set<string>();
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      dirs.clear();
    });
    const openAt = async (dir = tempDir()) => {
      dirs.add(dir);
      const store = await open(dir);
      opened.push(store);
      return { ...store, dir };
    };

    it('decides against the current state, appends, and answers the outcome once committed', async () => {
      const { store, committed } = await openAt();
      const job_id = randomUUID();
      let seen: JobSnapshot | undefined | 'not called' = 'not called';
      const outcome = await store.update(INTEGRATION, job_id, (job) => {
        seen = job;
        return jobDecider.decide(createCommand(job_id), job);
      });
      expect([seen, outcome]).toEqual([undefined, 'created']);
      const stored = await store.job(INTEGRATION, job_id);
      expect([jobState(stored!.job), stored!.version]).toEqual(['created', 1]);
      expect(committed.map((e) => [e.type, e.job_id])).toEqual([['job.created', job_id]]);
    });

    it('reads only what is committed, and answers a duplicate only once the original is durable', async () => {
      const { store, committed } = await openAt();
      const job_id = randomUUID();
      const first = store.update(INTEGRATION, job_id, decided(createCommand(job_id)));
      // Read while the create is appended: nothing yet, or the job once its create is committed.
      const read = await store.job(INTEGRATION, job_id);
      expect(read === undefined || committed.some((event) => event.job_id === job_id)).toBe(true);
      const again = await store.update(INTEGRATION, job_id, decided(createCommand(job_id)));
      expect(again).toBe('duplicate');
      expect(await store.job(INTEGRATION, job_id)).toBeDefined();
      expect(await first).toBe('created');
    });

    it('runs concurrent updates of one job one after the other: each decides on what the last one left', async () => {
      const { store } = await openAt();
      const job_id = randomUUID();
      await store.update(INTEGRATION, job_id, decided(createCommand(job_id)));
      const at = 2_000;
      const outcomes = await Promise.all([
        store.update(INTEGRATION, job_id, decided({ type: 'complete', integration_id: INTEGRATION, job_id, result: { insights: [] }, at })),
        store.update(INTEGRATION, job_id, decided({ type: 'cancel', integration_id: INTEGRATION, job_id, at })),
        store.update(
          INTEGRATION,
          job_id,
          decided({ type: 'fail', integration_id: INTEGRATION, job_id, error: { code: 'reasoner_error', message: 'x' }, at }),
        ),
      ]);
      expect(outcomes).toEqual(['completed', 'settled', 'settled']);
      expect((await store.job(INTEGRATION, job_id))!.version).toBe(2);
    });

    it("refuses a decision with another job's event and appends nothing of it", async () => {
      const { store, committed } = await openAt();
      const job_id = randomUUID();
      const stray = (): Decision<JobEvent, JobOutcome> => jobDecider.decide(createCommand(randomUUID()), undefined);
      await expect(store.update(INTEGRATION, job_id, stray)).rejects.toThrow(/job store/);
      expect([await store.job(INTEGRATION, job_id), committed]).toEqual([undefined, []]);
    });

    it("keeps a job by its integration and its id: another integration's job of the same id is another job, and never its state", async () => {
      const { store } = await openAt();
      const job_id = randomUUID();
      expect(await store.update(INTEGRATION, job_id, decided(createCommand(job_id)))).toBe('created');
      // The other integration's decision sees no job: its create is a new job, not a duplicate or a conflict.
      let seen: JobSnapshot | undefined | 'not called' = 'not called';
      const outcome = await store.update(OTHER, job_id, (job) => {
        seen = job;
        return jobDecider.decide(createCommand(job_id, OTHER, 1_500), job);
      });
      expect([seen, outcome]).toEqual([undefined, 'created']);
      expect(await store.update(OTHER, job_id, decided({ type: 'cancel', integration_id: OTHER, job_id, at: 2_000 }))).toBe('cancelled');
      const mine = await store.job(INTEGRATION, job_id);
      const theirs = await store.job(OTHER, job_id);
      expect([jobState(mine!.job), mine!.version, mine!.job.context.integration_id]).toEqual(['created', 1, INTEGRATION]);
      expect([jobState(theirs!.job), theirs!.version, theirs!.job.context.integration_id]).toEqual(['cancelled', 2, OTHER]);
      expect((await store.openJobs(INTEGRATION)).jobs.map((job) => job.context.job_id)).toEqual([job_id]);
      expect((await store.openJobs(OTHER)).jobs).toEqual([]);
      // A decision on one integration's job that emits the other's event is refused.
      await expect(
        store.update(INTEGRATION, job_id, () => ({
          events: [{ type: 'job.cancelled', integration_id: OTHER, job_id, at: 3_000 }],
          outcome: 'cancelled',
        })),
      ).rejects.toThrow(/job store/);
      expect(jobState((await store.job(INTEGRATION, job_id))!.job)).toBe('created');
    });

    it("lists an integration's open jobs oldest first with its newest frame id; settled ones leave the list", async () => {
      const { store } = await openAt();
      const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
      for (const job_id of [a, b, c]) await store.update(INTEGRATION, job_id, decided(createCommand(job_id)));
      const elsewhere = randomUUID();
      await store.update('another-integration', elsewhere, decided(createCommand(elsewhere, 'another-integration')));
      await store.update(
        INTEGRATION,
        a,
        decided({ type: 'deliver', integration_id: INTEGRATION, job_id: a, seq: 7, lease_until: 90_000, at: 2_000 }),
      );
      await store.update(INTEGRATION, b, decided({ type: 'cancel', integration_id: INTEGRATION, job_id: b, at: 2_000 }));
      const open = await store.openJobs(INTEGRATION);
      expect([open.jobs.map((job) => job.context.job_id), open.lastSeq]).toEqual([[a, c], 7]);
      expect(await store.openJobs('no-such-integration')).toEqual({ jobs: [], lastSeq: 0 });
      expect((await store.allOpenJobs()).map((job) => job.context.job_id).sort()).toEqual([a, c, elsewhere].sort());
    });

    it('keeps every job, its version and the stream position across a restart', async () => {
      const first = await openAt();
      const job_id = randomUUID();
      await first.store.update(INTEGRATION, job_id, decided(createCommand(job_id)));
      await first.store.update(
        INTEGRATION,
        job_id,
        decided({ type: 'deliver', integration_id: INTEGRATION, job_id, seq: 1, lease_until: 90_000, at: 2_000 }),
      );
      await first.store.update(OTHER, job_id, decided(createCommand(job_id, OTHER)));
      await first.close();
      opened.splice(opened.indexOf(first), 1);
      const second = await openAt(first.dir);
      const stored = await second.store.job(INTEGRATION, job_id);
      expect([jobState(stored!.job), stored!.version]).toEqual(['delivered', 2]);
      expect((await second.store.openJobs(INTEGRATION)).lastSeq).toBe(1);
      expect(await second.store.update(INTEGRATION, job_id, decided(createCommand(job_id)))).toBe('duplicate');
      const theirs = await second.store.job(OTHER, job_id);
      expect([jobState(theirs!.job), theirs!.version, theirs!.job.context.integration_id]).toEqual(['created', 1, OTHER]);
    });
  });
}

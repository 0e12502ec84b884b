/**
 * The backend's retention pass (engine/retention.ts): jobs settled (long enough ago, or beyond an
 * integration's newest `--max-settled-jobs`), revoked integrations with all they had (their jobs, their
 * events, their presence), pairings ended long enough ago, and pairing tickets used or expired. Pairings have a
 * retention of their own, at most the backend's: one that never became an integration costs its maker
 * nothing, and a completed one is needed only until its expiry (its keys live on in its integration).
 * An integration that lives on is compacted instead: once it has events older than the retention, one
 * `integration.compacted` stands for all of them, so that its history is bounded by the retention.
 *
 * A forgotten integration leaves nothing behind. Its tokens authenticate only together with its id, and
 * ids are the backend's own random UUIDs, never a caller's: once it is gone, every token it had is
 * refused as an unknown integration's (401, as a wrong token), and no integration can take its id again.
 */
import {
  forgottenStream,
  jobStream,
  olderJobStream,
  ticketStream,
  type BackendEvent,
  type BackendForgotten,
} from '../../machines/reasoning/backend-events.js';
import { nothing, type Decision } from '../../machines/core/decider.js';
import { compactionOf } from '../../machines/reasoning/integration.js';
import { jobKey, jobRefOf, type JobRef } from '../../machines/reasoning/job-events.js';
import { windowOf } from '../../machines/reasoning/quotas.js';
import type { StoredEvent } from '../../storage/event-log.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';
import type { Clock } from '../core/clock.js';
import { FORGOTTEN_PER_EVENT, forgetInBatches, pruneForgettings, type ForgottenBatch } from '../core/retention.js';
import type { BackendLog } from './backend-log.js';
import { compactable, forgettable } from './forgettable.js';
import type { Presence } from './presence.js';
import type { BackendProjection } from './projection.js';

/** One hour after its expiry: long enough for both sides to read how a pairing ended, and to debug it. */
export const DEFAULT_PAIRING_RETENTION_MS = 60 * 60 * 1000;

/**
 * How long a forgetting event stays once a newer one stands for it: a node of a shared log that lags
 * less than this behind still folds it (one that lagged more would keep what it forgot).
 */
export const FORGETTINGS_KEPT_MS = 24 * 60 * 60 * 1000;

export interface BackendRetentionParts {
  readonly projection: BackendProjection;
  readonly log: BackendLog<unknown>;
  readonly presence: Presence;
  readonly clock: Clock;
  readonly pairingRetentionMs: number;
  /** Settled jobs kept per integration (`--max-settled-jobs`): the oldest beyond these go before the retention is up. */
  readonly maxSettledJobs: number;
  /** The integrations whose partitions this node forgets in: every one on a log of one process, those it owns on a shared one. */
  readonly served: () => Iterable<string>;
}

interface Batch extends ForgottenBatch {
  readonly integration_ids: readonly string[];
}

/**
 * A pass visits the service's partition (pairings, tickets), then each integration's this node holds, in
 * turn. In each, every batch is a decision of that partition (on a shared log, only the node that owns an
 * integration's partition forgets in it): a `backend.forgotten`, then the compaction it names; once they
 * are committed, the events and presence of what it forgot, and the events of the compacted before it,
 * are removed. Then the forgetting events a newer one stands for go.
 */
export function forgetEndedRecords(parts: BackendRetentionParts) {
  const { clock, pairingRetentionMs } = parts;
  return async (endedBefore: number): Promise<number> => {
    const pairingsEndedBefore = Math.max(endedBefore, clock.now() - pairingRetentionMs);
    let forgotten = await forgetIn(parts, undefined, endedBefore, pairingsEndedBefore);
    for (const id of parts.served()) forgotten += await forgetIn(parts, id, endedBefore, pairingsEndedBefore);
    return forgotten;
  };
}

/** One partition's retention: the service's (`integrationId` undefined) or one integration's. */
async function forgetIn(
  { projection, log, presence, clock, maxSettledJobs }: BackendRetentionParts,
  integrationId: string | undefined,
  endedBefore: number,
  pairingsEndedBefore: number,
): Promise<number> {
  const partition = integrationId ?? SERVICE_PARTITION;
  const stream = forgottenStream(integrationId);
  const remove = async (streams: readonly string[], integrationIds: readonly string[], before: number) => {
    await log.removeStreams(partition, streams, before);
    await presence.forget(integrationIds);
  };
  const forgotten = await forgetInBatches(
    () =>
      log.decide(partition, (): Decision<BackendEvent, Batch | undefined> => {
        const state = integrationId === undefined ? projection.service() : projection.partition(integrationId);
        const options = { now: clock.now(), maxSettledJobs };
        const { jobs, pairing_ids, integration_ids, ticket_digests } = forgettable(
          state,
          endedBefore,
          pairingsEndedBefore,
          FORGOTTEN_PER_EVENT,
          options,
        );
        const leaving = new Set(integration_ids);
        const compacted_ids = compactable(state, endedBefore, FORGOTTEN_PER_EVENT).filter((id) => !leaving.has(id));
        if (jobs.length + pairing_ids.length + integration_ids.length + compacted_ids.length + ticket_digests.length === 0)
          return nothing(undefined);
        const at = clock.now();
        const created = Object.fromEntries([...state.created].filter(([, { window }]) => window >= windowOf(at)));
        const event: BackendForgotten = {
          type: 'backend.forgotten',
          ...(integrationId === undefined ? {} : { integration_id: integrationId }),
          jobs: byIntegration(jobs),
          job_ids: jobs.map(({ job_id }) => job_id),
          pairing_ids,
          integration_ids,
          compacted_ids,
          ...(ticket_digests.length === 0 ? {} : { ticket_digests }),
          ...(Object.keys(created).length === 0 ? {} : { created }),
          sent: Object.fromEntries([...state.sent].filter(([id]) => !leaving.has(id))),
          ended_before: endedBefore,
          at,
        };
        const compactions = compacted_ids.map((id) => compactionOf(projection.integration(id)!, at));
        const count = Math.max(jobs.length, pairing_ids.length, integration_ids.length, compacted_ids.length, ticket_digests.length);
        return {
          events: [event, ...compactions],
          outcome: { streams: [...streamsOf(event), ...olderStreams(projection, jobs)], integration_ids, count },
        };
      }),
    async ({ streams, integration_ids }) => remove(streams, integration_ids, await log.lastPositionOf(partition, stream)),
  );
  await pruneForgettings(
    (await log.readStream(partition, stream)) as StoredEvent<BackendForgotten>[],
    clock.now() - FORGETTINGS_KEPT_MS,
    ({ event, position }) => remove(streamsOf(event), event.integration_ids ?? [], position),
    (position) => log.removeStreams(partition, [stream], position),
  );
  return forgotten;
}

/** The streams whose events before it a forgetting event let go. */
function streamsOf(event: BackendForgotten): string[] {
  const integrations = [...(event.integration_ids ?? []), ...(event.compacted_ids ?? [])];
  // An older log's forgetting event names its jobs by `job_id` alone, whose events were under `job:{job_id}`.
  const jobs =
    event.jobs === undefined
      ? (event.job_ids ?? []).map(olderJobStream)
      : Object.entries(event.jobs).flatMap(([integrationId, ids]) => ids.map((id) => jobStream(integrationId, id)));
  const tickets = (event.ticket_digests ?? []).map(ticketStream);
  return [...jobs, ...event.pairing_ids.map((id) => `pairing:${id}`), ...integrations.map((id) => `integration:${id}`), ...tickets];
}

/** Each integration's jobs, by `job_id`: how `backend.forgotten` names them. */
function byIntegration(jobs: readonly JobRef[]): Record<string, string[]> {
  const named: Record<string, string[]> = {};
  for (const { integration_id, job_id } of jobs) (named[integration_id] ??= []).push(job_id);
  return named;
}

/**
 * A log written while a `job_id` was the whole service's keeps a job's earlier events under
 * `job:{job_id}`, whichever integration's job it was: removed once no job of that id is left, so never
 * while the job whose events they may be lives on.
 */
function olderStreams(projection: BackendProjection, forgotten: readonly JobRef[]): string[] {
  const leaving = new Set(forgotten.map(({ integration_id, job_id }) => jobKey(integration_id, job_id)));
  const ids = new Set(forgotten.map(({ job_id }) => job_id));
  for (const key of projection.state().jobs.keys()) if (!leaving.has(key)) ids.delete(jobRefOf(key).job_id);
  return [...ids].map(olderJobStream);
}

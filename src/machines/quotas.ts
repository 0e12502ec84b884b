/**
 * The backend's quotas (PROTOCOL.md 6e.18 to 6e.21): what one integration may make the backend hold or
 * log. Each is decided against the fold of everything committed, like every other decision, so that on a
 * shared log a count is the service's, exact. Pure: the time, the limits and the state arrive as data.
 * A refusal says when trying again may succeed: the `Retry-After` the edge answers its 429 with.
 */
import type { HttpErrorCode } from '../protocol/index.js';
import { isOnline, REKEY_TIMES_KEPT, type IntegrationSnapshot } from './integration.js';
import type { JobSnapshot } from './job.js';

export interface Quotas {
  /** Open (unsettled) jobs an integration may have; the create of one more is refused. */
  readonly maxOpenJobs: number;
  /** Job followers (`GET …/jobs/{job_id}/events`) an integration may hold open on one node. */
  readonly maxFollowers: number;
  /** Job followers a node holds, every integration together. */
  readonly maxNodeFollowers: number;
  /** What a plugin says of itself (status, plugin, reasoner, versions, refusal) is logged at most once per this while it is online; 0 logs every change. */
  readonly statusIntervalMs: number;
  /** Key rotations an integration may ask for in an hour (at most `REKEY_TIMES_KEPT`). */
  readonly maxRekeysPerHour: number;
  /** An unanswered key rotation stands in the way of a new one until it is this old. */
  readonly rekeyReplaceAfterMs: number;
}

/** The defaults; `statusIntervalMs` is the heartbeat interval's (30 s) unless given. */
export const DEFAULT_QUOTAS: Omit<Quotas, 'statusIntervalMs'> = {
  maxOpenJobs: 32,
  maxFollowers: 64,
  maxNodeFollowers: 1024,
  maxRekeysPerHour: 6,
  rekeyReplaceAfterMs: 10 * 60_000,
};

export const REKEY_WINDOW_MS = 60 * 60_000;

/** The quotas given over the defaults; refused (RangeError) when one cannot work. */
export function quotasOf(given: Partial<Quotas>, heartbeatIntervalMs: number): Quotas {
  const quotas = { ...DEFAULT_QUOTAS, statusIntervalMs: heartbeatIntervalMs, ...given };
  for (const key of ['maxOpenJobs', 'maxFollowers', 'maxNodeFollowers', 'maxRekeysPerHour'] as const) {
    if (!Number.isSafeInteger(quotas[key]) || quotas[key] < 1) throw new RangeError(`quotas.${key} must be a whole number, at least 1`);
  }
  if (quotas.maxRekeysPerHour > REKEY_TIMES_KEPT) throw new RangeError(`quotas.maxRekeysPerHour must be at most ${REKEY_TIMES_KEPT}`);
  // A plugin waits out the Retry-After of a status change: longer than two intervals, and its integration would show offline.
  if (!(quotas.statusIntervalMs >= 0 && quotas.statusIntervalMs <= 2 * heartbeatIntervalMs)) throw new RangeError('quotas.statusIntervalMs must be between 0 and two heartbeat intervals');
  if (!(quotas.rekeyReplaceAfterMs >= 0)) throw new RangeError('quotas.rekeyReplaceAfterMs must not be negative');
  return quotas;
}

export type QuotaCode = Extract<HttpErrorCode, 'too_many_open_jobs' | 'too_many_followers' | 'too_many_node_followers' | 'too_many_status_changes' | 'rekey_pending' | 'too_many_rekeys'>;

/** A refusal for load: nothing was logged; trying again after `retry_after_s` may succeed. */
export interface OverQuota {
  readonly over: QuotaCode;
  /** Whole seconds, at least 1: when a slot may free up, or the rate window lets one more through. */
  readonly retry_after_s: number;
  readonly message: string;
}

/** `Retry-After` for a moment: whole seconds from `at`, rounded up, at least 1. */
export function secondsUntil(when: number, at: number): number {
  return Math.max(1, Math.ceil((when - at) / 1000));
}

/**
 * The create of a job the log does not hold, while its integration has `max` open already: refused until
 * the earliest of their deadlines, when one has ended at the latest (one that ends sooner frees a slot
 * sooner). A create retried for a job that exists never comes here: it is answered the job.
 */
export function overOpenJobs(open: readonly JobSnapshot[], max: number, at: number): OverQuota | undefined {
  if (open.length < max) return undefined;
  const earliest = open.reduce((soonest, job) => Math.min(soonest, job.context.deadline_at), Infinity);
  const message = `this integration has ${open.length} open jobs, the most it may have (${max}): a slot frees up when one ends, by its deadline at the latest (Retry-After)`;
  return { over: 'too_many_open_jobs', retry_after_s: secondsUntil(earliest, at), message };
}

/**
 * A heartbeat whose news (an `integration.seen`) would be logged sooner than `intervalMs` after the last
 * one was, while the integration is online: refused until the interval has passed. Coming online is
 * always logged: going offline takes three missed heartbeats, so it cannot come faster than that.
 */
export function overStatusChanges(integration: IntegrationSnapshot, intervalMs: number, at: number): OverQuota | undefined {
  const { seen } = integration.context;
  if (!isOnline(integration) || seen === undefined || at >= seen.at + intervalMs) return undefined;
  const message = `what the plugin says of itself is logged at most once every ${intervalMs / 1000} s: send this heartbeat again after Retry-After`;
  return { over: 'too_many_status_changes', retry_after_s: secondsUntil(seen.at + intervalMs, at), message };
}

/**
 * A key rotation the integration has not asked for yet: refused while the latest is unanswered and
 * younger than `rekeyReplaceAfterMs` (one open at a time; after that a new one replaces it, so a client
 * whose plugin never answered is not stuck), or when `maxRekeysPerHour` were asked for in the last hour.
 */
export function overRekeys(integration: IntegrationSnapshot, quotas: Pick<Quotas, 'maxRekeysPerHour' | 'rekeyReplaceAfterMs'>, at: number): OverQuota | undefined {
  const { rekey, rekeys_at } = integration.context;
  const replaceable = rekey === undefined ? at : rekey.requested_at + quotas.rekeyReplaceAfterMs;
  if (rekey !== undefined && rekey.answer === undefined && at < replaceable) {
    const message = `key rotation ${rekey.rekey_id} waits for the assistant's answer: a new one may replace it once it is ${quotas.rekeyReplaceAfterMs / 1000} s old (Retry-After)`;
    return { over: 'rekey_pending', retry_after_s: secondsUntil(replaceable, at), message };
  }
  const inWindow = rekeys_at.filter((when) => when > at - REKEY_WINDOW_MS);
  if (inWindow.length < quotas.maxRekeysPerHour) return undefined;
  // One more is let through once the oldest of the last `max` leaves the window.
  const message = `this integration asked for ${inWindow.length} key rotations in the last hour, the most it may (${quotas.maxRekeysPerHour})`;
  return { over: 'too_many_rekeys', retry_after_s: secondsUntil(inWindow[inWindow.length - quotas.maxRekeysPerHour]! + REKEY_WINDOW_MS, at), message };
}

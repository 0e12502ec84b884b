/**
 * The backend's quotas (PROTOCOL.md 6e.18 to 6e.21): what one integration may make the backend hold or
 * log. Each is decided against the fold of everything committed, like every other decision, so that on a
 * shared log a count is the service's, exact. Pure: the time, the limits and the state arrive as data.
 * A refusal says when trying again may succeed: the `Retry-After` the edge answers its 429 with.
 */
import type { HttpErrorCode } from '../../protocol/index.js';
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
  /** Jobs an integration may create in a minute of the clock (`job.created` counted by its `at`); one more is refused. */
  readonly maxJobsPerMinute: number;
  /** Settled jobs kept per integration: retention forgets the oldest beyond these before the retention is up. */
  readonly maxSettledJobs: number;
  /** Plugin streams an integration may open on one node in a minute (a rate kept in memory, per node). */
  readonly maxStreamsPerMinute: number;
}

/** The defaults; `statusIntervalMs` is the heartbeat interval's (30 s) unless given. */
export const DEFAULT_QUOTAS: Omit<Quotas, 'statusIntervalMs'> = {
  maxOpenJobs: 32,
  maxFollowers: 64,
  maxNodeFollowers: 1024,
  maxRekeysPerHour: 6,
  rekeyReplaceAfterMs: 10 * 60_000,
  maxJobsPerMinute: 60,
  maxSettledJobs: 1_000,
  maxStreamsPerMinute: 10,
};

export const REKEY_WINDOW_MS = 60 * 60_000;

/** The quotas given over the defaults; refused (RangeError) when one cannot work. */
export function quotasOf(given: Partial<Quotas>, heartbeatIntervalMs: number): Quotas {
  const quotas = { ...DEFAULT_QUOTAS, statusIntervalMs: heartbeatIntervalMs, ...given };
  for (const key of [
    'maxOpenJobs',
    'maxFollowers',
    'maxNodeFollowers',
    'maxRekeysPerHour',
    'maxJobsPerMinute',
    'maxSettledJobs',
    'maxStreamsPerMinute',
  ] as const) {
    if (!Number.isSafeInteger(quotas[key]) || quotas[key] < 1) throw new RangeError(`quotas.${key} must be a whole number, at least 1`);
  }
  if (quotas.maxRekeysPerHour > REKEY_TIMES_KEPT) throw new RangeError(`quotas.maxRekeysPerHour must be at most ${REKEY_TIMES_KEPT}`);
  // A plugin waits out the Retry-After of a status change: longer than two intervals, and its integration would show offline.
  if (!(quotas.statusIntervalMs >= 0 && quotas.statusIntervalMs <= 2 * heartbeatIntervalMs))
    throw new RangeError('quotas.statusIntervalMs must be between 0 and two heartbeat intervals');
  if (!(quotas.rekeyReplaceAfterMs >= 0)) throw new RangeError('quotas.rekeyReplaceAfterMs must not be negative');
  return quotas;
}

export type QuotaCode = Extract<
  HttpErrorCode,
  | 'too_many_open_jobs'
  | 'too_many_followers'
  | 'too_many_node_followers'
  | 'too_many_status_changes'
  | 'rekey_pending'
  | 'too_many_rekeys'
  | 'too_many_jobs'
  | 'too_many_stream_opens'
>;

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
 * Whether `times` (oldest first, all within the window) leave room for one more of at most `limit` a
 * window; if not, the seconds until the one that must leave the window has left it.
 */
export function windowFull(times: readonly number[], limit: number, windowMs: number, at: number): number | undefined {
  return times.length < limit ? undefined : secondsUntil(times[times.length - limit]! + windowMs, at);
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
export function overRekeys(
  integration: IntegrationSnapshot,
  quotas: Pick<Quotas, 'maxRekeysPerHour' | 'rekeyReplaceAfterMs'>,
  at: number,
): OverQuota | undefined {
  const { rekey, rekeys_at } = integration.context;
  const replaceable = rekey === undefined ? at : rekey.requested_at + quotas.rekeyReplaceAfterMs;
  if (rekey !== undefined && rekey.answer === undefined && at < replaceable) {
    const message = `key rotation ${rekey.rekey_id} waits for the assistant's answer: a new one may replace it once it is ${quotas.rekeyReplaceAfterMs / 1000} s old (Retry-After)`;
    return { over: 'rekey_pending', retry_after_s: secondsUntil(replaceable, at), message };
  }
  const inWindow = rekeys_at.filter((when) => when > at - REKEY_WINDOW_MS);
  const retry_after_s = windowFull(inWindow, quotas.maxRekeysPerHour, REKEY_WINDOW_MS, at);
  if (retry_after_s === undefined) return undefined;
  const message = `this integration asked for ${inWindow.length} key rotations in the last hour, the most it may (${quotas.maxRekeysPerHour})`;
  return { over: 'too_many_rekeys', retry_after_s, message };
}

/** The length of the window the rates of jobs and of stream opens are counted in. */
export const RATE_WINDOW_MS = 60_000;

/**
 * How many things of a kind an integration did in the window of the clock an `at` falls in: each one
 * counted by its own `at`, so that every node that folds the same events counts the same (what a
 * `job.created` leaves in the fold, and what a node keeps of its stream opens). O(1) per integration.
 */
export interface WindowCount {
  /** The window's start: `at` rounded down to a whole `RATE_WINDOW_MS`. */
  readonly window: number;
  readonly count: number;
}

/** The start of the window `at` falls in. */
export function windowOf(at: number): number {
  return at - (at % RATE_WINDOW_MS);
}

/** The count after one more at `at`. An `at` of an earlier window (another node's clock a little behind) counts in the newest. */
export function countOneMore(count: WindowCount | undefined, at: number): WindowCount {
  const window = windowOf(at);
  return count === undefined || window > count.window ? { window, count: 1 } : { window: count.window, count: count.count + 1 };
}

/** One more at `at` would make more than `max` in its window: refused until the window ends. */
function overRate(count: WindowCount | undefined, max: number, at: number): number | undefined {
  if (count === undefined || at >= count.window + RATE_WINDOW_MS || count.count < max) return undefined;
  return secondsUntil(count.window + RATE_WINDOW_MS, at);
}

/**
 * The create of a job the log does not hold, when its integration created `maxJobsPerMinute` in this
 * minute already: refused until the minute ends. Bounds what a client that cancels each job at once can
 * make the log hold: `max_open_jobs` cannot, since such a client never has a job open for long.
 */
export function overJobRate(created: WindowCount | undefined, max: number, at: number): OverQuota | undefined {
  const retry_after_s = overRate(created, max, at);
  if (retry_after_s === undefined) return undefined;
  const message = `this integration created ${max} jobs this minute, the most it may: try again after Retry-After`;
  return { over: 'too_many_jobs', retry_after_s, message };
}

/** A plugin stream opened when the integration opened `maxStreamsPerMinute` on this node in this minute already: refused until the minute ends. */
export function overStreamOpens(opened: WindowCount | undefined, max: number, at: number): OverQuota | undefined {
  const retry_after_s = overRate(opened, max, at);
  if (retry_after_s === undefined) return undefined;
  const message = `this integration opened ${max} job streams on this node this minute, the most it may: reconnect after Retry-After`;
  return { over: 'too_many_stream_opens', retry_after_s, message };
}

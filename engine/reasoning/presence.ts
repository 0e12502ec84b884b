/**
 * What nodes share besides the log, kept out of it because it changes with every request of its kind:
 *
 * - `Presence`: until when each integration counts as online, by the newest heartbeat (2.3). Heartbeats are
 *   not logged one by one (only what one changes is), so several nodes, each taking some of a plugin's
 *   heartbeats, share them here: a node's offline deadline that comes asks it before going offline.
 * - `PairingAttempts`: when each source started a pairing, and sent a code that named no pairing, so that
 *   the limits on each source (PROTOCOL.md 7.8) hold for the service, not for each node.
 *
 * Beside a log of one process both are kept in its memory; beside a shared one, in PostgreSQL (storage/postgres/):
 * the composition root chooses (adapters/backend/seams.ts).
 */
export interface Presence {
  /** A heartbeat: online until `until` (a later heartbeat's, never an earlier one's). */
  beat(integrationId: string, until: number): Promise<void>;
  /** Until when the newest heartbeat anywhere keeps the integration online; undefined for none. */
  until(integrationId: string): Promise<number | undefined>;
  /** Retention forgot these (revoked) integrations: nothing of them is kept. */
  forget(integrationIds: readonly string[]): Promise<void>;
}

export class LocalPresence implements Presence {
  private readonly online = new Map<string, number>();

  async beat(integrationId: string, until: number): Promise<void> {
    this.online.set(integrationId, Math.max(until, this.online.get(integrationId) ?? until));
  }

  async until(integrationId: string): Promise<number | undefined> {
    return this.online.get(integrationId);
  }

  async forget(integrationIds: readonly string[]): Promise<void> {
    for (const id of integrationIds) this.online.delete(id);
  }
}

/** What is counted of each source for its pairing limits: pairings it started, codes it sent that named none. */
export type AttemptKind = 'start' | 'unknown_handle';

export interface PairingAttempts {
  /** An attempt of `kind` came from `source` at `at`. */
  record(kind: AttemptKind, source: string, at: number): Promise<void>;
  /** When the attempts of `kind` from `source` after `since` came, oldest first. */
  since(kind: AttemptKind, source: string, since: number): Promise<number[]>;
}

/** Kept in memory: a list of times per source and kind, dropped once all are older than `keepMs`. */
export class LocalPairingAttempts implements PairingAttempts {
  private readonly times = new Map<string, number[]>();
  /** How many lists there may be before the stale ones are swept (sources that stopped coming). */
  private sweepAt = 1_024;

  constructor(private readonly keepMs: number) {}

  async record(kind: AttemptKind, source: string, at: number): Promise<void> {
    const key = `${kind} ${source}`;
    this.times.set(key, [...(this.times.get(key) ?? []), at]);
    if (this.times.size < this.sweepAt) return;
    for (const [stale, times] of this.times) if (times.at(-1)! <= at - this.keepMs) this.times.delete(stale);
    this.sweepAt = Math.max(1_024, 2 * this.times.size);
  }

  async since(kind: AttemptKind, source: string, since: number): Promise<number[]> {
    const key = `${kind} ${source}`;
    const kept = (this.times.get(key) ?? []).filter((when) => when > since);
    if (kept.length === 0) this.times.delete(key);
    else this.times.set(key, kept);
    return kept;
  }
}

/**
 * What nodes share besides the log, kept out of it because it changes with every request of its kind:
 *
 * - `Presence`: until when each integration counts as online, by the newest heartbeat (2.3). Heartbeats are
 *   not logged one by one (only what one changes is), so several nodes, each taking some of a plugin's
 *   heartbeats, share them here: a node's offline deadline that comes asks it before going offline.
 * - `Misses`: when pairing codes that named no pairing came, so that the limit on guessing holds for the
 *   service, not for each node.
 *
 * The defaults are this process's memory; a shared store keeps both in PostgreSQL (storage/postgres/).
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

export interface Misses {
  /** A code that named no pairing came at `at`. */
  record(at: number): Promise<void>;
  /** How many came after `since`. */
  countSince(since: number): Promise<number>;
}

export class LocalMisses implements Misses {
  private times: number[] = [];

  async record(at: number): Promise<void> {
    this.times.push(at);
  }

  async countSince(since: number): Promise<number> {
    this.times = this.times.filter((when) => when > since);
    return this.times.length;
  }
}

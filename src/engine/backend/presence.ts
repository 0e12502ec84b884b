/**
 * The `Presence` seam: until when each integration counts as online, by the newest heartbeat (2.3). Not
 * logged heartbeat by heartbeat (only what a heartbeat changes is), so several nodes, each taking some of a
 * plugin's heartbeats, share it here: a node's offline deadline that comes asks it before going offline.
 * The default is this process's memory; a shared store keeps it in PostgreSQL (storage/postgres/presence.ts).
 */
export interface Presence {
  /** A heartbeat: online until `until` (a later heartbeat's, never an earlier one's). */
  beat(integrationId: string, until: number): Promise<void>;
  /** Until when the newest heartbeat anywhere keeps the integration online; undefined for none. */
  until(integrationId: string): Promise<number | undefined>;
}

export class LocalPresence implements Presence {
  private readonly online = new Map<string, number>();

  async beat(integrationId: string, until: number): Promise<void> {
    this.online.set(integrationId, Math.max(until, this.online.get(integrationId) ?? until));
  }

  async until(integrationId: string): Promise<number | undefined> {
    return this.online.get(integrationId);
  }
}

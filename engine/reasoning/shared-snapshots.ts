/**
 * A shared-log node's snapshots of its fold (PostgreSQL: one table, the newest two kept): one every
 * `everyEvents` events of this node's own commits and one when it stops, encoded and written off the step,
 * so that a start, or a fold again, begins at the newest one that decodes instead of the log's start.
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { PgEventLog } from '../../storage/postgres/event-log.js';
import type { Clock } from '../core/clock.js';
import { inSlices, type SnapshotCodec } from '../core/snapshots.js';
import type { FoldParts } from './backend-log.js';

export class SharedSnapshots<S> {
  /** This node's own committed events since its last snapshot. */
  private sinceSnapshot = 0;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly log: PgEventLog<BackendEvent>,
    private readonly clock: Clock,
    private readonly everyEvents: number,
    private readonly report: (error: unknown, context: { readonly what: string }) => void,
  ) {}

  /**
   * The fold replaced by the newest snapshot at or before `upTo` that decodes (each one passed over is
   * reported, never trusted), or by nothing; answers where the fold stands then.
   */
  async restoreNewest(parts: FoldParts<S>, upTo: number): Promise<number> {
    for (const snapshot of await this.log.snapshots()) {
      if (snapshot.position > upTo) continue;
      try {
        parts.restore(parts.codec.decode(snapshot.data));
        return snapshot.position;
      } catch (error) {
        this.report(error, { what: `using the snapshot at position ${snapshot.position}` });
      }
    }
    parts.restore(undefined);
    return 0;
  }

  /** Whether this node committed anything since its last snapshot. */
  get pending(): boolean {
    return this.sinceSnapshot > 0;
  }

  /** A snapshot wanted as soon as the fold holds exactly what is committed again. */
  due(): void {
    this.sinceSnapshot = this.everyEvents;
  }

  /** `count` events of this node's own commits, the fold at `position`: a snapshot once there were enough since the last. */
  committed(count: number, codec: SnapshotCodec<S>, position: number): void {
    this.sinceSnapshot += count;
    if (this.sinceSnapshot >= this.everyEvents) this.take(codec, position);
  }

  /** A snapshot of the fold now, at `position`, when it holds exactly what is committed; encoded and written off the step. */
  take(codec: SnapshotCodec<S>, position: number): void {
    this.sinceSnapshot = 0;
    if (position === 0) return;
    const state = codec.capture();
    const at = this.clock.now();
    this.writing = this.writing.then(async () => {
      try {
        await this.log.writeSnapshot(position, await inSlices(codec.encode(state)), at);
      } catch (error) {
        this.report(error, { what: 'writing a snapshot' });
      }
    });
  }

  /** Every snapshot taken so far, written (or its failure reported). */
  written(): Promise<void> {
    return this.writing;
  }
}

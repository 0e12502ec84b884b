/**
 * The integrations' job streams (4.1, 6.1): one live stream per integration, each run by a subscription
 * actor over its socket. A second stream takes over from the first, which hears why (`superseded`) after
 * what it was sent, and ends.
 */
import type { Frame } from '../../machines/subscription.js';
import type { Clock } from '../clock.js';
import { SubscriptionActor, type SubscriberTransport } from '../subscription-actor.js';
import { SUPERSEDED_FRAME } from './frames.js';

/** A plugin never has more than this queued for it before it is dropped (it resumes from its cursor). */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;

export class JobStreams {
  private readonly streams = new Map<string, SubscriptionActor>();

  constructor(
    private readonly clock: Clock,
    private readonly keepaliveMs: number,
  ) {}

  isLive(integrationId: string): boolean {
    return this.streams.has(integrationId);
  }

  /** Opens the integration's stream, taking over from the one it had. */
  open(integrationId: string, connect: () => SubscriberTransport): SubscriptionActor {
    const previous = this.streams.get(integrationId);
    if (previous !== undefined) {
      // Its plugin must not reconnect at once: another plugin holds the integration now.
      previous.push([{ kind: 'resync', task_id: '', text: SUPERSEDED_FRAME, bytes: SUPERSEDED_FRAME.length }]);
      previous.close('superseded');
    }
    const actor = new SubscriptionActor(connect(), this.clock, { keepaliveMs: this.keepaliveMs, maxQueuedBytes: MAX_QUEUED_BYTES }, (closed) => {
      if (this.streams.get(integrationId) === closed) this.streams.delete(integrationId);
    });
    this.streams.set(integrationId, actor);
    actor.open('');
    return actor;
  }

  push(integrationId: string, frame: Frame): void {
    this.streams.get(integrationId)?.push([frame]);
  }

  closeAll(): void {
    for (const actor of [...this.streams.values()]) actor.close('host_closing');
  }
}

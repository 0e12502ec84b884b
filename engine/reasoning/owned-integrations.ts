/**
 * What this node does for the integrations it owns (ownership.ts), kept apart from deciding: once it comes
 * to own one, it hears the integration's topic (on a broker: every commit to it at once, not at its next
 * look), folds its partition and arms its jobs' timers and its offline deadline from the fold; once another
 * node owns it, those timers stop here and a stream of it held here ends, so that its plugin reconnects.
 */
import type { BackendLog } from './backend-log.js';
import type { Integrations } from './integrations.js';
import type { JobTimers } from './job-timers.js';
import type { Ownership } from './ownership.js';
import type { BackendProjection } from './projection.js';
import { assistantChannel, type PubSub } from './pubsub.js';
import type { JobStreams } from './streams.js';

export interface OwnedParts {
  readonly log: BackendLog<unknown>;
  readonly projection: BackendProjection;
  readonly ownership: Ownership;
  readonly pubsub: PubSub;
  readonly timers: JobTimers;
  readonly integrations: Integrations;
  readonly streams: JobStreams;
  /** Reports a failure of work done in the background. */
  readonly background: (work: Promise<unknown>, what: string) => void;
}

/** Listens to the ownership: what this node owns, it keeps the timers of. */
export function keepOwnedIntegrations(parts: OwnedParts): void {
  const { log, projection, ownership, pubsub, timers, integrations, streams, background } = parts;
  /** The topics of the integrations this node owns, subscribed to while it does. */
  const topics = new Map<string, () => void>();
  const unsubscribe = (integrationId: string) => {
    topics.get(integrationId)?.();
    topics.delete(integrationId);
  };
  const owned = async (integrationId: string) => {
    unsubscribe(integrationId);
    topics.set(
      integrationId,
      pubsub.subscribe(assistantChannel(integrationId), () => {}),
    );
    await log.caughtUp(integrationId);
    if (!ownership.owns(integrationId)) return;
    for (const job of projection.openJobs(integrationId)) timers.arm(job);
    integrations.rearm([integrationId]);
  };
  ownership.listen({
    gained: (integrationId) => background(owned(integrationId), 'taking an integration over'),
    lost: (integrationId) => {
      unsubscribe(integrationId);
      timers.disarm(projection.openJobs(integrationId));
      integrations.unwatch(integrationId);
      streams.supersede(integrationId);
    },
    // Owned while it has timers to keep, or its plugin's stream is here.
    needed: (integrationId) => streams.holds(integrationId) || projection.live(integrationId),
  });
}

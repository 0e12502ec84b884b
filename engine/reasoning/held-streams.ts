/**
 * The integration's stream as this node holds it: an open is counted against the integration's opens a
 * minute, its holding is logged first (`integration.stream_held`, so that a stream another node holds ends
 * when that node folds it), then it opens, and a key rotation not yet answered is sent on it. Once
 * committed, what the stream hears besides its jobs: its integration revoked, another node's stream
 * taken over, a key rotation asked for.
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { OverQuota } from '../../machines/reasoning/quotas.js';
import { HostClosingError } from '../core/failures.js';
import type { SubscriberTransport, SubscriptionActor } from '../core/subscription-actor.js';
import { rekeyFrame } from './frames.js';
import type { Integrations } from './integrations.js';
import type { Ownership } from './ownership.js';
import type { BackendProjection } from './projection.js';
import type { JobStreams } from './streams.js';

export interface HeldStreamParts {
  readonly streams: JobStreams;
  readonly integrations: Integrations;
  readonly projection: BackendProjection;
  /** The stream's node owns its integration: it takes it over as the stream opens. */
  readonly ownership: Ownership;
  /** This node (its epoch), as the log names the holder. */
  readonly node: string;
  /** Whether the engine closes: no stream opens then. */
  readonly closed: () => boolean;
}

export class HeldStreams {
  constructor(private readonly parts: HeldStreamParts) {}

  /**
   * Opens the integration's stream; a second one takes over from the first (`JobStreams`). `undefined`:
   * the integration is unknown or revoked; an `OverQuota`: it opened too many on this node this minute
   * (nothing is logged, no stream is taken over).
   */
  async open(
    integrationId: string,
    cursor: number | undefined,
    connect: () => SubscriberTransport,
  ): Promise<SubscriptionActor | OverQuota | undefined> {
    const { streams, integrations, projection, ownership, node, closed } = this.parts;
    if (closed()) throw new HostClosingError();
    const over = streams.admit(integrationId);
    if (over !== undefined) return over;
    let held: boolean;
    try {
      // Taken over only once it is known to be an integration: a lease is never made for an id that names none.
      held =
        integrations.integration(integrationId) !== undefined &&
        (await ownership.takeOver(integrationId)) &&
        (await integrations.holdStream(integrationId, node));
    } catch (error) {
      // Refused for the store (503): it logged and delivered nothing, so it does not count against the plugin's opens.
      streams.unadmit(integrationId);
      throw error;
    }
    if (closed()) throw new HostClosingError();
    if (!held) return undefined;
    // Opened in the step the decision resolves in: a takeover logged after it is dispatched later, and ends this stream.
    const actor = streams.open(integrationId, cursor, connect);
    const rekey = projection.integration(integrationId)?.context.rekey;
    if (rekey !== undefined && rekey.answer === undefined) actor.push([rekeyFrame(rekey)]);
    return actor;
  }

  /** What an integration's stream hears besides its jobs, once committed. */
  committed(event: BackendEvent): void {
    const { streams, projection, node } = this.parts;
    // A revoked integration's stream ends at once: its plugin must not wait for its next heartbeat to hear it.
    if (event.type === 'integration.revoked') streams.end(event.integration_id);
    // Only the log hands the stream to another node: a notice on the broker cannot.
    if (event.type === 'integration.stream_held' && event.node !== node) streams.supersede(event.integration_id);
    if (event.type === 'integration.rekey_requested')
      streams.push(event.integration_id, rekeyFrame(projection.integration(event.integration_id)!.context.rekey!));
  }
}

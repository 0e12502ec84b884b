/**
 * The integrations' job streams (4.1, 6.1): one live stream per integration, each run by a subscription
 * actor over its socket. A second stream takes over from the first, which hears why (`superseded`) after
 * what it was sent, and ends.
 *
 * A stream learns of its integration's jobs from the `PubSub` topic `assistant_channel:{integration}` and
 * reads them from the `JobStore` by that integration and the notice's `job_id`: a created or released job
 * is delivered on it, and a delivery it decided goes out as a frame once committed. Each stream does this
 * work one step at a time, in the order it heard of it, so its frames leave in the order their deliveries
 * were decided. Which node holds the integration's stream is the log's to say (`integration.stream_held`,
 * decided before a stream opens): a stream here is superseded by a second one here, or when the log says
 * another node's took over, never by a notice.
 */
import { jobDecider } from '../../machines/reasoning/job-decider.js';
import { countOneMore, overStreamOpens, windowOf, type OverQuota, type WindowCount } from '../../machines/reasoning/quotas.js';
import type { Frame } from '../../machines/core/subscription.js';
import { isSettled, jobState, type JobSnapshot } from '../../machines/reasoning/job.js';
import type { Clock } from '../core/clock.js';
import { SubscriptionActor, type SubscriberTransport } from '../core/subscription-actor.js';
import { RECONNECT_FRAME, SUPERSEDED_FRAME, frameOf } from './frames.js';
import { OWNER, type DecideOptions } from './backend-log.js';
import type { JobDecide, JobStore } from './job-store.js';
import { Serial } from './serial.js';
import { assistantChannel, type JobNotice, type PubSub } from './pubsub.js';

/** A plugin never has more than this queued for it before it is dropped (it resumes from its cursor). */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;

export interface StreamParts {
  readonly clock: Clock;
  readonly keepaliveMs: number;
  readonly store: JobStore;
  readonly pubsub: PubSub;
  /** How long a delivered job waits for its plugin to say it runs it. */
  readonly leaseMs: number;
  /** The engine's way into the store (it refuses once the engine closes). */
  readonly update: <Outcome>(integrationId: string, jobId: string, decide: JobDecide<Outcome>, options?: DecideOptions) => Promise<Outcome>;
  /** Reports a failure of work done in the background, unless it is expected (the engine closing). */
  readonly background: (work: Promise<unknown>, what: string) => void;
  /** Streams an integration may open on this node in a minute (PROTOCOL.md 6e.24). */
  readonly maxOpensPerMinute: number;
}

interface LiveStream {
  readonly integrationId: string;
  readonly actor: SubscriptionActor;
  /** The id of the newest frame given on the integration's streams, as this one knows it. */
  lastSeq: number;
  /** Deliveries with an id up to this one were decided before this stream caught up: not its frames. */
  firstSeq: number;
  /** Its work, one step after another. */
  readonly work: Serial;
  closed: boolean;
}

export class JobStreams {
  private readonly streams = new Map<string, LiveStream>();
  /** Each integration's stream opens in the current minute, on this node only: a node's own sockets, no log. */
  private readonly opens = new Map<string, WindowCount>();
  private opensWindow = -Infinity;

  constructor(private readonly parts: StreamParts) {}

  /** The integrations' streams open on this node. */
  get count(): number {
    return this.streams.size;
  }

  /** Whether the integration's stream is open on this node. */
  holds(integrationId: string): boolean {
    return this.streams.has(integrationId);
  }

  /**
   * Opens the integration's stream, taking over from the one it had. It is sent every job waiting for
   * the plugin: created ones, and delivered ones the cursor does not show the plugin received; a running
   * one is not (its plugin has it, and a lapsed lease brings it back).
   */
  open(integrationId: string, cursor: number | undefined, connect: () => SubscriberTransport): SubscriptionActor {
    this.supersede(integrationId);
    let unsubscribe = (): void => {};
    const actor = new SubscriptionActor(
      connect(),
      this.parts.clock,
      { keepaliveMs: this.parts.keepaliveMs, maxQueuedBytes: MAX_QUEUED_BYTES },
      () => {
        stream.closed = true;
        unsubscribe();
        if (this.streams.get(integrationId) === stream) this.streams.delete(integrationId);
      },
    );
    const stream: LiveStream = {
      integrationId,
      actor,
      lastSeq: 0,
      firstSeq: 0,
      work: new Serial(this.parts.background, 'job stream'),
      closed: false,
    };
    this.streams.set(integrationId, stream);
    actor.open('');
    // In one step: the catch-up is queued before any notice can be.
    this.enqueue(stream, () => this.catchUp(stream, cursor));
    unsubscribe = this.parts.pubsub.subscribe(assistantChannel(integrationId), (notice) => {
      if (notice.type !== 'log.appended') this.enqueue(stream, () => this.noticed(stream, notice));
    });
    if (stream.closed) unsubscribe();
    return actor;
  }

  /**
   * Counts an open of the integration's stream, unless it would be one too many this minute: each new
   * stream is sent every delivered job again, and logs a delivery for each, so a plugin reconnecting in a
   * loop would grow the log by its open jobs each time.
   */
  admit(integrationId: string): OverQuota | undefined {
    const at = this.parts.clock.now();
    const window = windowOf(at);
    // A new minute: the counts of earlier ones count nothing now, so the map holds only this minute's integrations.
    if (window > this.opensWindow) {
      this.opens.clear();
      this.opensWindow = window;
    }
    const over = overStreamOpens(this.opens.get(integrationId), this.parts.maxOpensPerMinute, at);
    if (over === undefined) this.opens.set(integrationId, countOneMore(this.opens.get(integrationId), at));
    return over;
  }

  /** Takes back what `admit` counted, for an open that ended before it took the stream. */
  unadmit(integrationId: string): void {
    const opened = this.opens.get(integrationId);
    if (opened !== undefined && opened.count > 0) this.opens.set(integrationId, { ...opened, count: opened.count - 1 });
  }

  /** Another plugin holds the integration now (its stream opened here, or the log says on another node): the stream here hears so, after what it was sent, and ends. */
  supersede(integrationId: string): void {
    const previous = this.streams.get(integrationId);
    if (previous === undefined) return;
    // Its plugin must not reconnect at once.
    previous.actor.push([{ kind: 'resync', subject: '', text: SUPERSEDED_FRAME, bytes: SUPERSEDED_FRAME.length }]);
    previous.actor.close('superseded');
  }

  /** Sends a frame that is not a job's on the integration's stream, if it has one. */
  push(integrationId: string, frame: Frame): void {
    this.streams.get(integrationId)?.actor.push([frame]);
  }

  /** Ends the integration's stream, if it has one: the integration was revoked. */
  end(integrationId: string): void {
    this.streams.get(integrationId)?.actor.close('revoked');
  }

  /** The node drains: each stream is told to reconnect (to another node), after what it was sent, and ends. */
  closeAll(): void {
    for (const { actor } of [...this.streams.values()]) {
      actor.push([{ kind: 'resync', subject: '', text: RECONNECT_FRAME, bytes: RECONNECT_FRAME.length }]);
      actor.close('host_closing');
    }
  }

  private async catchUp(stream: LiveStream, cursor: number | undefined): Promise<void> {
    const { jobs, lastSeq } = await this.parts.store.openJobs(stream.integrationId);
    stream.lastSeq = Math.max(stream.lastSeq, lastSeq);
    stream.firstSeq = stream.lastSeq;
    for (const job of jobs) {
      const { seq } = job.context;
      const state = jobState(job);
      if (state === 'created') this.deliver(stream, job, isWaiting);
      // Unless it was sent again since it was read.
      else if (state === 'delivered' && !(cursor !== undefined && seq !== undefined && seq <= cursor))
        this.deliver(stream, job, (now) => jobState(now) === 'delivered' && now.context.seq === seq);
    }
  }

  private async noticed(stream: LiveStream, notice: JobNotice): Promise<void> {
    switch (notice.type) {
      case 'job.created':
      case 'job.released': {
        const stored = await this.parts.store.job(stream.integrationId, notice.job_id);
        if (stored !== undefined && isWaiting(stored.job)) this.deliver(stream, stored.job, isWaiting);
        return;
      }
      case 'job.delivered': {
        if (notice.seq <= stream.firstSeq) return;
        const stored = await this.parts.store.job(stream.integrationId, notice.job_id);
        // A job settled meanwhile is not worth a frame: its plugin would only hear that it is too late.
        if (stored !== undefined && !isSettled(stored.job)) stream.actor.push([frameOf(stored.job, notice.seq)]);
        return;
      }
      default:
        return;
    }
  }

  /** Delivers the job on this stream if `when` still holds of it when the store decides. */
  private deliver(stream: LiveStream, job: JobSnapshot, when: (now: JobSnapshot) => boolean): void {
    const { integration_id, job_id } = job.context;
    const at = this.parts.clock.now();
    const lease_until = at + this.parts.leaseMs;
    // The frame id is taken before deciding, so that the decision stays pure (a store may run it more than
    // once); a delivery decided against leaves its id unused, which is harmless: ids only need to increase.
    const seq = ++stream.lastSeq;
    const work = this.parts.update(
      integration_id,
      job_id,
      (now) => {
        if (stream.closed || now === undefined || !when(now)) return { events: [], outcome: 'unchanged' };
        return jobDecider.decide({ type: 'deliver', integration_id, job_id, seq, lease_until, at }, now);
      },
      OWNER,
    );
    this.parts.background(work, 'job delivery');
  }

  private enqueue(stream: LiveStream, step: () => Promise<void>): void {
    stream.work.run(async () => {
      if (!stream.closed) await step();
    });
  }
}

/** A job waiting for a stream: created, or released when its lease lapsed. */
function isWaiting(job: JobSnapshot): boolean {
  return jobState(job) === 'created';
}

/**
 * Clients following a job (PROTOCOL.md 6e.13): each follower is a subscription actor over its SSE
 * response. It hears of the job's changes on its integration's `PubSub` topic, reads the job from the
 * `JobStore` as committed, and is sent it whenever its version (how many events it has had, the frame's
 * id) is newer than the one it was sent last. Only the latest view matters, so a slow follower's queued
 * view of an open job is replaced by the next (`progress` frames, coalesced by job id); the view of a
 * settled job is never dropped (`terminal`).
 */
import { terminalFrame } from '../../protocol/index.js';
import { isSettled, type JobSnapshot } from '../../machines/reasoning/job.js';
import type { Clock } from '../core/clock.js';
import { SubscriptionActor, type SubscriberTransport } from '../core/subscription-actor.js';
import type { JobStore, StoredJob } from './job-store.js';
import { assistantChannel, type PubSub } from './pubsub.js';
import { Serial } from './serial.js';

/** A job's view as its follower reads it: the adapter's rendering (one JSON line). */
export type RenderJob = (job: JobSnapshot) => string;

export interface FollowerParts {
  readonly clock: Clock;
  readonly keepaliveMs: number;
  readonly store: JobStore;
  readonly pubsub: PubSub;
  readonly background: (work: Promise<unknown>, what: string) => void;
}

/** A follower never has more queued than this: views are small, and coalesced. */
const MAX_QUEUED_BYTES = 1024 * 1024;

export class JobFollowers {
  private readonly actors = new Set<SubscriptionActor>();
  /** Followers open on this node, by integration: a partition followed here is not let go. */
  private readonly byIntegration = new Map<string, number>();

  constructor(private readonly parts: FollowerParts) {}

  /** Followers open on this node. */
  get count(): number {
    return this.actors.size;
  }

  /** Whether a client follows one of the integration's jobs on this node. */
  follows(integrationId: string): boolean {
    return this.byIntegration.has(integrationId);
  }

  /** Opens a follower of the job; it is sent the job now unless its cursor shows it has this version. */
  open(job: JobSnapshot, cursor: number | undefined, connect: () => SubscriberTransport, render: RenderJob): SubscriptionActor {
    const { job_id, integration_id } = job.context;
    let unsubscribe = (): void => {};
    let closed = false;
    const actor = new SubscriptionActor(
      connect(),
      this.parts.clock,
      { keepaliveMs: this.parts.keepaliveMs, maxQueuedBytes: MAX_QUEUED_BYTES },
      () => {
        closed = true;
        unsubscribe();
        this.actors.delete(actor);
        const left = this.byIntegration.get(integration_id)! - 1;
        if (left === 0) this.byIntegration.delete(integration_id);
        else this.byIntegration.set(integration_id, left);
      },
    );
    this.actors.add(actor);
    this.byIntegration.set(integration_id, (this.byIntegration.get(integration_id) ?? 0) + 1);
    actor.open('');
    /** The newest version read for this follower (sent, or shown by its cursor); none before the first read. */
    let has: number | undefined;
    const reads = new Serial(this.parts.background, 'job follower');
    const refresh = () =>
      reads.run(async () => {
        const stored = await this.parts.store.job(integration_id, job_id);
        if (closed || stored === undefined) return;
        if (has === undefined ? cursor === undefined || cursor < stored.version : stored.version > has) send(actor, render, stored);
        has = Math.max(has ?? 0, stored.version);
      });
    refresh();
    // The topic is the integration's, so a notice's `job_id` is this job's only there.
    unsubscribe = this.parts.pubsub.subscribe(assistantChannel(integration_id), (notice) => {
      if ('job_id' in notice && notice.job_id === job_id) refresh();
    });
    if (closed) unsubscribe();
    return actor;
  }

  closeAll(): void {
    for (const actor of [...this.actors]) actor.close('host_closing');
  }
}

function send(actor: SubscriptionActor, render: RenderJob, { job, version }: StoredJob): void {
  const data = render(job);
  actor.push([
    {
      kind: isSettled(job) ? 'terminal' : 'progress',
      subject: job.context.job_id,
      text: terminalFrame(String(version), data),
      bytes: Buffer.byteLength(data),
    },
  ]);
}

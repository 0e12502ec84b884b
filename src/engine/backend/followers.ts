/**
 * Clients following a job (PROTOCOL.md 6e.13): each follower is a subscription actor over its SSE
 * response, and every committed change of the job sends it the job as it now stands, its frame id the
 * job's version (how many events it has). Only the latest view matters, so a slow follower's queued view
 * of an open job is replaced by the next (`progress` frames, coalesced by job id); the view of a settled
 * job is never dropped (`terminal`).
 */
import { terminalFrame } from '../../protocol/index.js';
import { isSettled, type JobSnapshot } from '../../machines/job.js';
import type { Clock } from '../clock.js';
import { SubscriptionActor, type SubscriberTransport } from '../subscription-actor.js';

/** A job's view as its follower reads it: the adapter's rendering (one JSON line). */
export type RenderJob = (job: JobSnapshot) => string;

interface Follower {
  readonly actor: SubscriptionActor;
  readonly render: RenderJob;
}

/** A follower never has more queued than this: views are small, and coalesced. */
const MAX_QUEUED_BYTES = 1024 * 1024;

export class JobFollowers {
  private readonly followers = new Map<string, Set<Follower>>();

  constructor(
    private readonly clock: Clock,
    private readonly keepaliveMs: number,
  ) {}

  /** Opens a follower of the job; it is sent the job now unless its cursor shows it has this version. */
  open(job: JobSnapshot, version: number, cursor: number | undefined, connect: () => SubscriberTransport, render: RenderJob): SubscriptionActor {
    const { job_id } = job.context;
    let follower: Follower | undefined;
    const actor = new SubscriptionActor(connect(), this.clock, { keepaliveMs: this.keepaliveMs, maxQueuedBytes: MAX_QUEUED_BYTES }, () => {
      const set = this.followers.get(job_id);
      set?.delete(follower!);
      if (set?.size === 0) this.followers.delete(job_id);
    });
    follower = { actor, render };
    const set = this.followers.get(job_id) ?? new Set<Follower>();
    this.followers.set(job_id, set.add(follower));
    actor.open('');
    if (cursor === undefined || cursor < version) send(follower, job, version);
    return actor;
  }

  /** A committed change of the job, to everyone following it. */
  push(job: JobSnapshot, version: number): void {
    for (const follower of this.followers.get(job.context.job_id) ?? []) send(follower, job, version);
  }

  closeAll(): void {
    for (const set of [...this.followers.values()]) for (const { actor } of [...set]) actor.close('host_closing');
  }
}

function send({ actor, render }: Follower, job: JobSnapshot, version: number): void {
  const data = render(job);
  actor.push([{ kind: isSettled(job) ? 'terminal' : 'progress', task_id: job.context.job_id, text: terminalFrame(String(version), data), bytes: Buffer.byteLength(data) }]);
}

/**
 * Reasoning jobs from the client's side (2.1, 4.1, PROTOCOL.md 6e, 7 and 8.9): create one (sealed, when
 * the client holds a pairing's keys), follow it as it changes, and read its result, opened and checked
 * against its response_schema here: for a BYO job the backend cannot. Every view the backend answers is
 * checked against the job asked for and as created (job-checks.ts): a view of another job, a sealed job
 * shown as plain, a result that does not open or does not follow the schema is a `JobCheckError`, never
 * a result. Browser-safe.
 */
import { seal, type Keyring } from '../../protocol/byo/index.js';
import { JobView, OPEN_JOB_STATES, type JobPurpose } from '../../protocol/reasoning.js';
import { BackendError, type BackendClient } from './backend-client.js';
import { sleep } from '../../engine/core/clock.js';
import { JobCheckError, bindingOf, checkedView, knownFrom, responseSchemaOf, type KnownJob } from './job-checks.js';

/** How often a cut event stream is followed again in a row before following gives up. */
const FOLLOW_ATTEMPTS = 5;

export interface CreateJob {
  readonly purpose: JobPurpose;
  readonly payload: unknown;
  readonly deadline_ms: number;
  /** Default: a fresh UUID. The same again is the same job. */
  readonly job_id?: string;
}

export class JobsClient {
  constructor(
    /** The integration's client (`…/integrations/{id}`, client token). */
    private readonly client: BackendClient,
    /** The integration's id, as the client's own configuration names it (never as a view says). */
    private readonly integrationId: string,
    /** The pairing's keys: with them, every job is BYO. */
    private readonly keys?: Keyring,
  ) {}

  async create(job: CreateJob): Promise<JobView> {
    const job_id = job.job_id ?? crypto.randomUUID();
    const known = { job_id, integration_id: this.integrationId, purpose: job.purpose };
    if (this.keys === undefined) {
      const body = { job_id, purpose: job.purpose, payload: job.payload, deadline_ms: job.deadline_ms };
      return checkedView(await this.client.call(JobView, '/jobs', { method: 'POST', body }), { ...known, byo: false }, undefined);
    }
    const sealed = { ...known, byo: true, deadline_at: await this.deadlineOf(job, job_id) };
    const body = {
      job_id,
      purpose: job.purpose,
      payload: seal(this.keys.current, bindingOf(sealed, 'client_to_assistant'), job.payload),
      byo: true,
      deadline_at: sealed.deadline_at,
      response_schema: responseSchemaOf(job.purpose),
    };
    return checkedView(await this.client.call(JobView, '/jobs', { method: 'POST', body }), sealed, this.keys);
  }

  async show(jobId: string): Promise<JobView> {
    return this.checked(await this.client.call(JobView, this.path(jobId), { method: 'GET' }), jobId);
  }

  async cancel(jobId: string): Promise<JobView> {
    return this.checked(await this.client.call(JobView, `${this.path(jobId)}/cancel`, { method: 'POST' }), jobId);
  }

  /**
   * Follows the job's events (PROTOCOL.md 6e.13) until it ends, telling `onChange` of each view; a cut
   * stream is followed again from its last frame id after 0.5 s, 1 s, 2 s, 4 s, and a fifth cut in a row
   * gives up. `created` is a view this client answered (from `create` or `show`): each view that follows
   * must keep what it says of the job. Resolves with the final view, its result opened.
   */
  async follow(created: JobView, onChange: (view: JobView) => void = () => {}): Promise<JobView> {
    const known = knownFrom(created);
    const path = `${this.path(created.job_id)}/events`;
    let view = created;
    let cursor: string | undefined;
    let cuts = 0;
    while (OPEN_JOB_STATES.has(view.state)) {
      let cut: unknown = new Error("the backend ended the job's event stream");
      try {
        for await (const event of this.client.events(path, cursor)) {
          view = checkedView(JobView.parse(JSON.parse(event.data)), known, this.keys);
          cursor = event.id;
          cuts = 0;
          onChange(view);
          if (!OPEN_JOB_STATES.has(view.state)) break;
        }
      } catch (error) {
        // The backend's word refused is no cut: following again would only hear it again.
        if (error instanceof JobCheckError) throw error;
        cut = error;
      }
      if (!OPEN_JOB_STATES.has(view.state)) break;
      cuts += 1;
      if (cuts >= FOLLOW_ATTEMPTS) throw cut;
      await sleep(this.client.clock, 250 * 2 ** cuts);
    }
    return view;
  }

  /**
   * The deadline a BYO job is sealed with (it is bound into the envelope): now plus `deadline_ms`; or, when
   * the caller names a job_id that the backend already holds (a retry whose answer was lost), that job's
   * own deadline, so that the retry is the same bytes and the same job (PROTOCOL.md 7.2). Only ever an
   * earlier deadline than this try's own: a backend cannot have a job sealed for longer than asked.
   */
  private async deadlineOf(job: CreateJob, job_id: string): Promise<string> {
    const fresh = this.client.clock.now() + job.deadline_ms;
    if (job.job_id !== undefined) {
      const existing = await this.client.call(JobView, this.path(job_id), { method: 'GET' }).catch((error: unknown) => {
        if (error instanceof BackendError && error.status === 404) return undefined;
        throw error;
      });
      if (existing !== undefined && existing.byo && Date.parse(existing.deadline_at) <= fresh) {
        // Its result, if it has one, is opened once the create answers.
        const { result: _opened_later, ...bare } = existing;
        checkedView(bare, { job_id, integration_id: this.integrationId, byo: true }, this.keys);
        return existing.deadline_at;
      }
    }
    return new Date(fresh).toISOString();
  }

  private checked(view: JobView, jobId: string): JobView {
    const known: KnownJob = { job_id: jobId, integration_id: this.integrationId };
    return checkedView(view, known, this.keys);
  }

  private path(jobId: string): string {
    return `/jobs/${encodeURIComponent(jobId)}`;
  }
}

/**
 * Reasoning jobs from the client's side (2.1, 4.1, PROTOCOL.md 6e and 7): create one (sealed, when the
 * client holds a pairing's keys, unless it asks for a plain one), follow it as it changes, and read its
 * result, opened and checked against its purpose's result schema here: for a BYO job the backend
 * cannot. A result that does not open or does not follow the schema is an error, never a result.
 * Browser-safe.
 */
import { open, seal, type EnvelopeBinding, type Keyring } from '../../protocol/byo/index.js';
import { ENVELOPE_VERSION, JobView, OPEN_JOB_STATES, PURPOSES, jsonSchemaOf, type JobPurpose } from '../../protocol/reasoning.js';
import { resultProblems } from '../../protocol/response-schema.js';
import type { BackendClient } from './backend-client.js';

/** How often a cut event stream is followed again in a row before following gives up. */
const FOLLOW_ATTEMPTS = 5;

export interface CreateJob {
  readonly purpose: JobPurpose;
  readonly payload: unknown;
  readonly deadline_ms: number;
  /** Default: a fresh UUID. The same again is the same job. */
  readonly job_id?: string;
  /** With keys, send it unencrypted anyway. */
  readonly plain?: boolean;
}

export class JobsClient {
  constructor(
    /** The integration's client (`…/integrations/{id}`, client token). */
    private readonly client: BackendClient,
    /** The pairing's keys: with them, jobs are BYO. */
    private readonly keys?: Keyring,
  ) {}

  async create(job: CreateJob): Promise<JobView> {
    const job_id = job.job_id ?? crypto.randomUUID();
    const sealing = job.plain === true ? undefined : this.keys;
    const body =
      sealing === undefined
        ? { job_id, purpose: job.purpose, payload: job.payload, deadline_ms: job.deadline_ms }
        : { job_id, purpose: job.purpose, payload: seal(sealing.current, bindingOf(job_id, job.purpose, 'client_to_assistant'), job.payload), byo: true, deadline_ms: job.deadline_ms };
    return this.opened(await this.client.call(JobView, '/jobs', { method: 'POST', body }));
  }

  async show(jobId: string): Promise<JobView> {
    return this.opened(await this.client.call(JobView, `/jobs/${encodeURIComponent(jobId)}`, { method: 'GET' }));
  }

  async cancel(jobId: string): Promise<JobView> {
    return this.opened(await this.client.call(JobView, `/jobs/${encodeURIComponent(jobId)}/cancel`, { method: 'POST' }));
  }

  /**
   * Follows the job's events (PROTOCOL.md 6e.13) until it ends, telling `onChange` of each view; a cut
   * stream is followed again from its last frame id after 0.5 s, 1 s, 2 s, 4 s, and a fifth cut in a row
   * gives up. Resolves with the final view, its result opened.
   */
  async follow(created: JobView, onChange: (view: JobView) => void = () => {}): Promise<JobView> {
    const path = `/jobs/${encodeURIComponent(created.job_id)}/events`;
    let view = created;
    let cursor: string | undefined;
    let cuts = 0;
    while (OPEN_JOB_STATES.has(view.state)) {
      let cut: unknown = new Error("the backend ended the job's event stream");
      try {
        for await (const event of this.client.events(path, cursor)) {
          view = JobView.parse(JSON.parse(event.data));
          cursor = event.id;
          cuts = 0;
          onChange(view);
          if (!OPEN_JOB_STATES.has(view.state)) break;
        }
      } catch (error) {
        cut = error;
      }
      if (!OPEN_JOB_STATES.has(view.state)) break;
      cuts += 1;
      if (cuts >= FOLLOW_ATTEMPTS) throw cut;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** cuts));
    }
    return this.opened(view);
  }

  /** A BYO job's view with its result opened and checked; any other view as it is. */
  private opened(view: JobView): JobView {
    if (!view.byo || view.result === undefined) return view;
    if (this.keys === undefined) throw new Error('the job is BYO: its result opens only with the pairing\'s keys');
    const result = open(this.keys.keyOf, bindingOf(view.job_id, view.purpose, 'assistant_to_client'), view.result);
    const problems = resultProblems(jsonSchemaOf(PURPOSES[view.purpose].result), result);
    if (problems !== undefined) throw new Error(`the job's result does not follow its purpose's result schema: ${problems}`);
    return { ...view, result: result as Record<string, unknown> };
  }
}

function bindingOf(job_id: string, purpose: string, direction: EnvelopeBinding['direction']): EnvelopeBinding {
  return { job_id, purpose, direction, envelope_version: ENVELOPE_VERSION };
}

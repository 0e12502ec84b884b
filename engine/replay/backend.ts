/**
 * A backend log's replay: the backend projection folds each event as the backend does when it starts, and
 * each step says what moved: a reasoning job (with its `jobState`), an integration or a pairing. Each
 * keeps its snapshot in the projection once settled, so its state is always read from there.
 */
import type { StateValue } from 'xstate';
import { forgottenJobKeys, isJobEvent, isPairingEvent, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobRefOf } from '../../machines/reasoning/job-events.js';
import { jobState } from '../../machines/reasoning/job.js';
import { dotPath } from '../../machines/core/state-value.js';
import type { LogRecord, StoredEvent } from '../../storage/event-log.js';
import { BackendProjection } from '../reasoning/projection.js';
import type { BackendState } from '../reasoning/backend-state.js';
import { TouchedEncoder } from './encoder.js';
import { backendWords } from './words.js';
import { foldStep, forgotten, type Entity, type Fold, type FoldScope, type FoldStart, type Moved, type Step } from './timeline.js';

/** Every event a backend logs: the compiler checks the list against `BackendEvent`. */
const BACKEND_EVENTS: Record<BackendEvent['type'], true> = {
  'backend.started': true,
  'backend.forgotten': true,
  'integration.created': true,
  'integration.token_rotated': true,
  'integration.revoked': true,
  'integration.seen': true,
  'integration.offline': true,
  'integration.rekey_requested': true,
  'integration.rekey_answered': true,
  'integration.stream_held': true,
  'integration.compacted': true,
  'job.created': true,
  'job.delivered': true,
  'job.started': true,
  'job.renewed': true,
  'job.released': true,
  'job.completed': true,
  'job.failed': true,
  'job.expired': true,
  'job.cancelled': true,
  'pairing.started': true,
  'pairing.joined': true,
  'pairing.committed': true,
  'pairing.client_key_sent': true,
  'pairing.revealed': true,
  'pairing.client_confirmed': true,
  'pairing.completed': true,
  'pairing.aborted': true,
  'pairing.expired': true,
  'pairing_ticket.issued': true,
};
const BACKEND_EVENT_TYPES: ReadonlySet<string> = new Set(Object.keys(BACKEND_EVENTS));

function entityOf(event: BackendEvent): Entity | undefined {
  // A ticket is the operator's, not an entity with a statechart.
  if (event.type === 'backend.started' || event.type === 'backend.forgotten' || event.type === 'pairing_ticket.issued') return undefined;
  if (isJobEvent(event)) return { kind: 'job', id: event.job_id, integration_id: event.integration_id };
  return isPairingEvent(event) ? { kind: 'pairing', id: event.pairing_id } : { kind: 'integration', id: event.integration_id };
}

export class BackendFold implements Fold<BackendState> {
  private readonly projection = new BackendProjection();
  private readonly scope: FoldScope;
  private readonly encoder = new TouchedEncoder();
  /** What the last event was about. */
  private entity: Entity | undefined;

  constructor(start?: FoldStart<BackendState>) {
    if (start !== undefined) this.projection.restore(start.state);
    this.scope = { log: 'backend', types: BACKEND_EVENT_TYPES, after: start?.position ?? 0 };
  }

  step(stored: StoredEvent<LogRecord>): Step {
    return foldStep<BackendEvent>(
      stored,
      this.scope,
      (event) => this.move(event),
      (event) => backendWords(event, this.sealed(event)),
    );
  }

  touched(): string {
    return this.entity === undefined ? '' : this.encoder.encode(this.snapshot(this.entity));
  }

  state(): BackendState {
    return this.projection.state();
  }

  private move(event: BackendEvent): Moved[] {
    // Which jobs it forgets, read before they are gone: an older log names them by `job_id` alone.
    const forgottenJobs = event.type === 'backend.forgotten' ? forgottenJobKeys(event, this.projection.state().jobs.keys()) : [];
    this.projection.apply(event);
    if (event.type === 'backend.forgotten') {
      this.entity = undefined;
      const jobOf = (key: string): Entity => {
        const { integration_id, job_id } = jobRefOf(key);
        return { kind: 'job', id: job_id, integration_id };
      };
      return [
        ...forgotten(forgottenJobs, jobOf),
        ...forgotten(event.pairing_ids, (id) => ({ kind: 'pairing', id })),
        ...forgotten(event.integration_ids ?? [], (id) => ({ kind: 'integration', id })),
      ];
    }
    const entity = (this.entity = entityOf(event));
    const snapshot = entity === undefined ? undefined : this.snapshot(entity);
    if (entity === undefined || snapshot === undefined) return [];
    const job = entity.kind === 'job' ? this.projection.job(entity.integration_id!, String(entity.id)) : undefined;
    return [{ entity, state: dotPath(snapshot.value), ...(job === undefined ? {} : { status: jobState(job) }) }];
  }

  /** Whether the job a folded event is about is BYO: its result is then an envelope. */
  private sealed(event: BackendEvent): boolean {
    return isJobEvent(event) && this.projection.job(event.integration_id, event.job_id)?.context.byo === true;
  }

  private snapshot(entity: Entity): { readonly value: StateValue } | undefined {
    const id = String(entity.id);
    if (entity.kind === 'job') return this.projection.job(entity.integration_id!, id);
    return entity.kind === 'pairing' ? this.projection.pairing(id) : this.projection.integration(id);
  }
}

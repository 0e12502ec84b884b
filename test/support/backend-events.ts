/** Backend events for tests that fold a log, or write one, by hand. */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { JobCreated } from '../../machines/reasoning/job-events.js';

export function integrationCreated(integration_id: string, at: number): BackendEvent {
  return {
    type: 'integration.created',
    integration_id,
    provider_kind: 'assistant-relay',
    relay_token_digest: 'r',
    client_token_digest: 'c',
    at,
  };
}

/** A capability probe the integration's client created at `at`, due a minute later unless `over` says otherwise. */
export function jobCreated(integration_id: string, job_id: string, at: number, over: Partial<JobCreated> = {}): JobCreated {
  return {
    type: 'job.created',
    job_id,
    integration_id,
    purpose: 'capability_probe',
    payload: {},
    byo: false,
    response_schema: { type: 'object' },
    provider_kind: 'assistant-relay',
    deadline_at: at + 60_000,
    at,
    ...over,
  };
}

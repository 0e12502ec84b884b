/**
 * What the backend engine tells an operator of itself at a moment (its jobs by state, its integrations,
 * its open streams): read from the fold when asked (a scrape of `/metrics`), so that no job or event pays
 * for it. On a shared log a node's fold holds the integrations it serves, so each node reads its share.
 */
import { isOnline } from '../../machines/reasoning/integration.js';
import { jobState } from '../../machines/reasoning/job.js';
import type { BackendState } from './backend-state.js';

export type JobStateName = ReturnType<typeof jobState>;

/** A job's states, open then settled. */
export const JOB_STATES: readonly JobStateName[] = ['created', 'delivered', 'running', 'completed', 'failed', 'expired', 'cancelled'];

export interface BackendGauges {
  /** The jobs the fold holds (retention forgets settled ones), by state. */
  readonly jobs: Readonly<Record<JobStateName, number>>;
  /** Integrations the fold holds, revoked ones until retention forgets them. */
  readonly integrationsHeld: number;
  /** Those whose plugin is online (its heartbeats on time). */
  readonly integrationsOnline: number;
  /** Those this node owns (their timers and streams are here). */
  readonly integrationsOwned: number;
  /** Integrations' job streams open on this node. */
  readonly jobStreams: number;
  /** Clients following a job on this node. */
  readonly followers: number;
}

export function backendGauges(
  state: BackendState,
  owns: (integrationId: string) => boolean,
  jobStreams: number,
  followers: number,
): BackendGauges {
  const jobs = Object.fromEntries(JOB_STATES.map((name) => [name, 0])) as Record<JobStateName, number>;
  for (const job of state.jobs.values()) jobs[jobState(job)] += 1;
  let integrationsOnline = 0;
  let integrationsOwned = 0;
  for (const [id, integration] of state.integrations) {
    if (isOnline(integration)) integrationsOnline += 1;
    if (owns(id)) integrationsOwned += 1;
  }
  return { jobs, integrationsHeld: state.integrations.size, integrationsOnline, integrationsOwned, jobStreams, followers };
}

/** What a client reads: a job (`JobView`) and an integration (`IntegrationView`), times as ISO 8601. */
import type { IntegrationView, JobView } from '../../protocol/index.js';
import { integrationState } from '../../machines/integration.js';
import { jobState, type JobSnapshot } from '../../machines/job.js';
import type { IntegrationRead } from '../../engine/backend/backend.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** A job: its state, and its result or error once it has one. */
export function jobView(job: JobSnapshot): JobView {
  const c = job.context;
  return {
    job_id: c.job_id,
    integration_id: c.integration_id,
    purpose: c.purpose,
    state: jobState(job),
    byo: c.byo,
    created_at: iso(c.created_at),
    deadline_at: iso(c.deadline_at),
    deliveries: c.deliveries,
    ...(c.settled_at === undefined ? {} : { settled_at: iso(c.settled_at) }),
    ...(c.result === undefined ? {} : { result: c.result }),
    ...(c.error === undefined ? {} : { error: c.error }),
  };
}

/** An integration: whether its plugin is there, what it said of itself last, and its capability profile. */
export function integrationView({ integration, profile: probed }: IntegrationRead): IntegrationView {
  const c = integration.context;
  const seen = c.seen;
  return {
    integration_id: c.integration_id,
    provider_kind: c.provider_kind,
    state: integrationState(integration),
    created_at: iso(c.created_at),
    ...(seen === undefined
      ? {}
      : {
          plugin: {
            ...seen.plugin,
            status: seen.status,
            reasoner: seen.reasoner,
            schema_versions: seen.schema_versions,
            envelope_versions: seen.envelope_versions,
            last_heartbeat_at: iso(seen.at),
            ...(seen.refused === undefined ? {} : { refused: seen.refused }),
          },
        }),
    ...(probed === undefined ? {} : { capability_profile: probed.profile, capability_probe: { job_id: probed.job_id, completed_at: iso(probed.completed_at) } }),
  };
}

/** What a client reads: a job (`JobView`), an integration (`IntegrationView`) and a pairing (`PairingView`), times as ISO 8601. */
import type { IntegrationView, JobView, PairingView, RekeyView } from '../../protocol/index.js';
import { integrationState, type Rekey } from '../../machines/reasoning/integration.js';
import { jobState, type JobSnapshot } from '../../machines/reasoning/job.js';
import { pairingState, type PairingSnapshot } from '../../machines/reasoning/pairing.js';
import type { IntegrationRead } from '../../engine/reasoning/engine.js';

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
    ...(probed === undefined
      ? {}
      : { capability_profile: probed.profile, capability_probe: { job_id: probed.job_id, completed_at: iso(probed.completed_at) } }),
  };
}

/** A pairing: its step, and every message of either side so far (public values only). */
export function pairingView(pairing: PairingSnapshot): PairingView {
  const c = pairing.context;
  const optional = <K extends string>(key: K, value: string | undefined) =>
    value === undefined ? {} : ({ [key]: value } as Record<K, string>);
  return {
    pairing_id: c.pairing_id,
    provider_kind: c.provider_kind,
    schema_version: c.schema_version,
    envelope_version: c.envelope_version,
    state: pairingState(pairing),
    created_at: iso(c.created_at),
    expires_at: iso(c.expires_at),
    ...optional('commitment', c.commitment),
    ...optional('client_key', c.client_key),
    ...optional('assistant_key', c.assistant_key),
    ...optional('nonce', c.nonce),
    ...optional('client_confirmation', c.client_confirmation),
    ...optional('assistant_confirmation', c.assistant_confirmation),
    ...optional('integration_id', c.integration_id),
    ...(c.aborted === undefined ? {} : { aborted: c.aborted }),
  };
}

/** A key rotation: the client's request, and the plugin's answer once there is one. */
export function rekeyView(rekey: Rekey): RekeyView {
  return {
    rekey_id: rekey.rekey_id,
    kid: rekey.kid,
    client_key: rekey.client_key,
    mac: rekey.mac,
    state: rekey.answer === undefined ? 'requested' : 'answered',
    ...(rekey.answer === undefined ? {} : { answer: rekey.answer }),
  };
}

/** BYO jobs as an honest client makes them, for the plugin's tests: a pairing's keys, sealed payloads, opened results. */
import {
  AssistantPairing,
  ClientPairing,
  crockfordRandom,
  open,
  seal,
  type Direction,
  type EnvelopeBinding,
  type SessionKeys,
} from '../../protocol/index.js';
import { INTEGRATION, makeJob } from './fake-backend.js';

/** An honest pairing: the client's keys and the assistant's, the same keys under one kid. */
export function pair(): { client: SessionKeys; assistant: SessionKeys } {
  const versions = { schema_version: 1, envelope_version: 1 };
  const pairingId = crypto.randomUUID();
  const secret = crockfordRandom(15);
  const client = new ClientPairing(pairingId, secret, versions);
  const assistant = new AssistantPairing(pairingId, secret, versions);
  const revealed = assistant.reveal(client.clientKey(assistant.commitment()));
  const { confirmation } = client.reveal(revealed.assistant_key, revealed.nonce);
  const confirmed = assistant.confirm(confirmation);
  return { client: client.finish(confirmed.confirmation), assistant: confirmed.keys };
}

/** What the client binds a job's envelopes to: the job as it created it, on its integration. */
function bindingOf(job: Record<string, unknown>, direction: Direction, integration_id = INTEGRATION): EnvelopeBinding {
  return {
    direction,
    integration_id,
    job_id: job.job_id as string,
    purpose: job.purpose as string,
    deadline_at: job.deadline_at as string,
    response_schema: job.response_schema as Record<string, unknown>,
    schema_version: job.schema_version as number,
    envelope_version: job.envelope_version as number,
  };
}

/** A live_analysis job whose payload the client sealed with `keys` (for the fake backend's integration, unless told another). */
export function byoJob(keys: SessionKeys, payload: unknown, deadlineMs = 30_000, integration_id = INTEGRATION): Record<string, unknown> {
  const job = makeJob(Date.now(), { byo: true }, deadlineMs);
  return { ...job, payload: seal(keys, bindingOf(job, 'client_to_assistant', integration_id), payload) };
}

/** The posted result, opened as the client opens it. */
export function openResult(keys: SessionKeys, job: Record<string, unknown>, body: Record<string, unknown>): unknown {
  return open((kid) => (kid === keys.kid ? keys : undefined), bindingOf(job, 'assistant_to_client'), body.result);
}

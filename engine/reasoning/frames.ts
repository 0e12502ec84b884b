/** What the integration's stream carries: a job (its envelope, 2.1, 6.1, as an SSE frame), a key rotation, a takeover. */
import { ENVELOPE_VERSION, SCHEMA_VERSION, terminalFrame, type ReasoningJob } from '../../protocol/index.js';
import type { Rekey } from '../../machines/reasoning/integration.js';
import type { JobSnapshot } from '../../machines/reasoning/job.js';
import type { Frame } from '../../machines/core/subscription.js';

/** A job as its stream frame carries it (2.1, 6.1). */
export function envelopeOf(job: JobSnapshot): ReasoningJob {
  const c = job.context;
  return {
    event_type: 'reasoning_job',
    job_id: c.job_id,
    purpose: c.purpose,
    deadline_at: new Date(c.deadline_at).toISOString(),
    schema_version: SCHEMA_VERSION,
    envelope_version: ENVELOPE_VERSION,
    response_schema: c.response_schema,
    payload: c.payload,
    byo: c.byo,
    provider_kind: c.provider_kind,
  };
}

/** A job frame is terminal in the stream's terms: it is never coalesced or dropped, only queued. */
export function frameOf(job: JobSnapshot, seq: number): Frame {
  const data = JSON.stringify(envelopeOf(job));
  return { kind: 'terminal', subject: job.context.job_id, text: terminalFrame(String(seq), data), bytes: Buffer.byteLength(data) };
}

/** Tells a stream that a second one took its place (PROTOCOL.md 6). */
export const SUPERSEDED_FRAME = `event: superseded\ndata: {"type":"superseded"}\n\n`;

/** Tells a stream that its node is draining (PROTOCOL.md 6e.17): its plugin reconnects at once, to another node behind the load balancer. */
export const RECONNECT_FRAME = `event: reconnect\ndata: {"type":"reconnect"}\n\n`;

/** A key rotation on its way to the plugin (PROTOCOL.md 7.12): never dropped, and no id (the job frames' cursor does not count it). */
export function rekeyFrame(rekey: Rekey): Frame {
  const data = JSON.stringify({ rekey_id: rekey.rekey_id, kid: rekey.kid, client_key: rekey.client_key, mac: rekey.mac });
  const text = `event: rekey\ndata: ${data}\n\n`;
  return { kind: 'terminal', subject: `rekey:${rekey.rekey_id}`, text, bytes: text.length };
}

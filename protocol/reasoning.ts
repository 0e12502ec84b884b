/**
 * The reasoning channel's wire (1.3, 2.1-2.4, 4.1, 6.1, 9): the ReasoningJob envelope the backend relays
 * to the assistant plugin, the BYO envelope a payload or result may be instead of plain JSON, the
 * heartbeat and its answer, the capability profile, and the bodies of the job endpoints. Every field the
 * spec leaves unshown is our decision (PROTOCOL.md section 6). A job's `payload` and `result` are opaque
 * to the backend whenever they are BYO envelopes: it only routes them.
 */
import { z } from 'zod';
import { fails } from './errors.js';
import { isUuid } from './ids.js';

export const SCHEMA_VERSION = 1;
export const ENVELOPE_VERSION = 1;

export const JobId = z.string().refine(isUuid, { message: 'job_id must be a UUID' });

export const JobPurpose = z.enum(['live_analysis', 'session_summary', 'capability_probe']);
export type JobPurpose = z.infer<typeof JobPurpose>;

/** How deep a payload, result or schema may nest: far past any real one, far short of a stack overflow. */
export const MAX_JSON_DEPTH = 64;

/** Whether a parsed JSON value nests no deeper than `max` (looked at without recursion). */
export function withinDepth(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > max) return false;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return true;
}

/** The size of a JSON value as the bounds count it (a job's payload and result, a schema): its compact JSON in UTF-8 bytes. */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value);
  let bytes = text.length;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    // Two bytes below U+0800, three above; a surrogate pair is four (JSON.stringify escapes a lone one).
    if (unit >= 0x80) bytes += unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 1 : 2;
  }
  return bytes;
}

/** A plain JSON object, or a BYO envelope (`byo: true` on the job says which); bounded in depth, so no one can make a stack overflow of it. */
export const JsonObject = z
  .record(z.string(), z.unknown())
  .refine((value) => withinDepth(value), { message: `nests deeper than ${MAX_JSON_DEPTH} levels` });

/** The ReasoningJob envelope (2.1), one SSE frame of the integration's stream. */
export const ReasoningJob = z.object({
  event_type: z.literal('reasoning_job'),
  job_id: JobId,
  purpose: JobPurpose,
  deadline_at: z.iso.datetime({ offset: false }),
  /** 1 is the version in use; a job of another version still parses, so that a plugin can fail it `unsupported_version`. */
  schema_version: z.number().int().min(1),
  envelope_version: z.number().int().min(1),
  /** A JSON Schema the result must follow (for a BYO job: the decrypted result). */
  response_schema: JsonObject,
  payload: JsonObject,
  /** True when `payload` is a BYO envelope, and the result must be one too. */
  byo: z.boolean(),
  provider_kind: z.string().min(1),
});
export type ReasoningJob = z.infer<typeof ReasoningJob>;

/** A code and a message: why a job failed, or why a heartbeat was refused (the shape of every error body's `error`). */
export const CodedError = z.object({
  code: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, { message: 'error.code must be a lowercase identifier' }),
  message: z.string().max(2_000),
});
export type CodedError = z.infer<typeof CodedError>;

/** `POST …/jobs/{job_id}/result`: the result, or a failure report that fails the job. */
export const JobResultBody = z.union([z.object({ result: JsonObject }).strict(), z.object({ error: CodedError }).strict()]);
export type JobResultBody = z.infer<typeof JobResultBody>;

/** The longest a job may run: `deadline_ms` at most, and a client's `deadline_at` at most this (and `DEADLINE_SKEW_MS`) past the backend's clock. */
export const MAX_DEADLINE_MS = 3_600_000;
/** How far a client's clock may run ahead of the backend's for its `deadline_at` (PROTOCOL.md 6.7). */
export const DEADLINE_SKEW_MS = 60_000;

/** `POST …/integrations/{id}/jobs` (the client's side, unshown in the seed): idempotent by `job_id`. */
export const JobCreateBody = z.object({
  job_id: JobId,
  purpose: JobPurpose,
  payload: JsonObject,
  byo: z.boolean().default(false),
  /** Milliseconds from creation; 1 s to 1 h. Not read when `deadline_at` is given. */
  deadline_ms: z.number().int().min(1_000).max(MAX_DEADLINE_MS).default(30_000),
  /**
   * The deadline as the client chose it (ISO 8601 UTC, milliseconds): required for a BYO job, whose
   * envelope binds it (PROTOCOL.md 7.3); within 1 h (and 60 s of clock skew) of the backend's clock.
   */
  deadline_at: z.iso.datetime({ offset: false, precision: 3 }).optional(),
  /** Replaces the purpose's own response schema (a BYO client may want its own). */
  response_schema: JsonObject.optional(),
});
export type JobCreateBody = z.infer<typeof JobCreateBody>;

/** The states of a job (3.3; machines/job.ts draws them). */
export const JobState = z.enum(['created', 'delivered', 'running', 'completed', 'failed', 'expired', 'cancelled']);
export type JobState = z.infer<typeof JobState>;

/** The states a job leaves by itself; the others are final. */
export const OPEN_JOB_STATES: ReadonlySet<JobState> = new Set(['created', 'delivered', 'running']);

/** Versions a plugin handles, as ranges of integers. */
export const VersionRange = z.object({ min: z.number().int().min(1), max: z.number().int().min(1) }).refine((r) => r.min <= r.max, {
  message: 'a version range has min <= max',
});
export type VersionRange = z.infer<typeof VersionRange>;

/** What a plugin says every 30 s (2.3). */
export const Heartbeat = z.object({
  plugin: z.object({ name: z.string().min(1).max(100), version: z.string().min(1).max(50) }),
  provider_kind: z.string().min(1).max(100),
  schema_versions: VersionRange,
  envelope_versions: VersionRange,
  /** `stopped`: the plugin's last heartbeat, sent as it stops; the integration is offline at once (PROTOCOL.md 6e.3). */
  status: z.enum(['ready', 'busy', 'degraded', 'stopped']),
  /** Jobs the plugin is running now: their delivery leases are renewed. */
  running_job_ids: z.array(JobId).max(1_000),
  reasoner: z.object({ name: z.string().min(1).max(100), model: z.string().max(200).optional() }),
});
export type Heartbeat = z.infer<typeof Heartbeat>;

/** The longest heartbeat interval a backend may set (PROTOCOL.md 6e.25), and a plugin follows: 10 minutes. */
export const MAX_HEARTBEAT_INTERVAL_S = 600;

/** The backend's answer to a heartbeat: what the plugin must act on. */
export const HeartbeatAnswer = z.object({
  ok: z.literal(true),
  /** When to send the next one: the backend's setting (30 s unless its operator says otherwise), followed from the next heartbeat on. */
  interval_s: z.number().int().min(1),
  /** Refused: the plugin must stop taking jobs and tell its operator (`code`: e.g. `unsupported_version`). */
  refused: CodedError.optional(),
  /** The backend wants a capability profile from the plugin (a probe job follows). Always false in this release: clients probe. */
  probe_requested: z.boolean(),
});
export type HeartbeatAnswer = z.infer<typeof HeartbeatAnswer>;

/** A self-description of the assistant's skills (1.4, 2.4): the result of a `capability_probe` job. */
export const CapabilityProfile = z.object({
  profile_version: z.literal(1),
  provider_kind: z.string().min(1).max(100),
  skills: z.array(z.object({ name: z.string().min(1).max(100), description: z.string().max(1_000) })).max(200),
  models: z.array(z.object({ id: z.string().min(1).max(200), context_tokens: z.number().int().positive().optional() })).max(100),
  tools: z.array(z.string().min(1).max(100)).max(200),
  limits: z.object({ max_concurrent_jobs: z.number().int().positive(), max_payload_bytes: z.number().int().positive() }),
  schema_versions: VersionRange,
  envelope_versions: VersionRange,
});
export type CapabilityProfile = z.infer<typeof CapabilityProfile>;

// ---- the purposes' payloads and results (2.1: "not shown"; ours, shipped as JSON Schema files) ---------

/** One utterance of a call's transcript. */
const Utterance = z.object({
  speaker: z.string().min(1).max(200),
  text: z.string().max(100_000),
  /** Milliseconds since the call started. */
  at_ms: z.number().int().min(0).optional(),
});

export const LiveAnalysisPayload = z.object({
  /** The call's session, for the assistant's own context (the chat's `insights:` session is its twin). */
  session_id: z.string().min(1).max(256),
  /** The newest part of the transcript. */
  transcript: z.array(Utterance).min(1).max(10_000),
  /** Standing context: the situation and the active playbook, as the client shows them. */
  context: z.string().max(100_000).optional(),
});

export const LiveAnalysisResult = z.object({
  /** What is worth surfacing now, most important first; empty when nothing is. */
  insights: z
    .array(
      z.object({
        text: z.string().min(1).max(500),
        kind: z.enum(['suggestion', 'risk', 'question', 'fact']),
        confidence: z.number().min(0).max(1),
      }),
    )
    .max(10),
});

export const SessionSummaryPayload = z.object({
  session_id: z.string().min(1).max(256),
  transcript: z.array(Utterance).min(1).max(100_000),
  notes: z.string().max(100_000).optional(),
});

export const SessionSummaryResult = z.object({
  summary: z.string().min(1).max(20_000),
  action_items: z.array(z.object({ text: z.string().min(1).max(1_000), owner: z.string().max(200).optional() })).max(100),
  decisions: z.array(z.string().min(1).max(1_000)).max(100),
});

export const CapabilityProbePayload = z.object({}).strict();

/** Each purpose's payload and result, as zod schemas (their JSON Schema files are generated from these). */
export const PURPOSES = {
  live_analysis: { payload: LiveAnalysisPayload, result: LiveAnalysisResult },
  session_summary: { payload: SessionSummaryPayload, result: SessionSummaryResult },
  capability_probe: { payload: CapabilityProbePayload, result: CapabilityProfile },
} as const satisfies Record<JobPurpose, { payload: z.ZodType; result: z.ZodType }>;

/** A schema as JSON Schema (draft 2020-12), for the files shipped in schemas/ and for jobs' `response_schema`. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
}

// ---- the backend's edge: what its routes read besides bodies (a failure message is the catalogue code) ----

/** `…/integrations/{id}/…`. */
export const IntegrationPath = z.object({ id: z.string().refine(isUuid, fails('invalid_integration_id')) });

/** `…/admin/integrations/{id}/tokens/{role}/rotate`. */
export const TokenRolePath = IntegrationPath.extend({ role: z.enum(['relay', 'client']) });

/** The operator's `POST …/admin/integrations`. */
export const IntegrationCreateBody = z.object({ provider_kind: z.string().min(1).max(100).default('assistant-relay') }).strict();
export type IntegrationCreateBody = z.infer<typeof IntegrationCreateBody>;

/** `…/integrations/{id}/jobs/{job_id}/…`. */
export const JobPath = IntegrationPath.extend({ job_id: z.string().refine(isUuid, fails('invalid_job_id')) });

/** The job stream's `Last-Event-ID`: the id of the last frame the plugin received (6d.1). */
export const JobStreamHeaders = z.looseObject({
  'last-event-id': z
    .string(fails('invalid_stream_cursor'))
    .regex(/^[1-9][0-9]{0,15}$/, fails('invalid_stream_cursor'))
    .transform(Number)
    .optional(),
});

/** A job as the client reads it (`GET …/jobs/{job_id}`, and the answer to a create). */
export const JobView = z.object({
  job_id: JobId,
  integration_id: z.string(),
  purpose: JobPurpose,
  state: JobState,
  byo: z.boolean(),
  created_at: z.iso.datetime(),
  deadline_at: z.iso.datetime(),
  /** How many times it went out on the stream. */
  deliveries: z.number().int().min(0),
  settled_at: z.iso.datetime().optional(),
  result: JsonObject.optional(),
  error: CodedError.optional(),
});
export type JobView = z.infer<typeof JobView>;

/**
 * An integration as its client reads it (`GET …/integrations/{id}`): whether its plugin is there, what
 * that plugin said of itself at its latest heartbeat, and the capability profile of its latest completed
 * plain `capability_probe` job (2.4).
 */
export const IntegrationView = z.object({
  integration_id: z.string(),
  provider_kind: z.string(),
  /** unseen: no heartbeat yet; offline: three heartbeats missed; revoked: its tokens no longer work. */
  state: z.enum(['unseen', 'online', 'offline', 'revoked']),
  created_at: z.iso.datetime(),
  plugin: z
    .object({
      name: z.string(),
      version: z.string(),
      status: Heartbeat.shape.status,
      reasoner: Heartbeat.shape.reasoner,
      schema_versions: VersionRange,
      envelope_versions: VersionRange,
      last_heartbeat_at: z.iso.datetime(),
      refused: CodedError.optional(),
    })
    .optional(),
  capability_profile: CapabilityProfile.optional(),
  /** The probe job the profile came from, and when it completed. */
  capability_probe: z.object({ job_id: JobId, completed_at: z.iso.datetime() }).optional(),
});
export type IntegrationView = z.infer<typeof IntegrationView>;

/** A transcript line as people write it, `Speaker: text`, as a line of a payload's transcript; a line without a speaker is the caller's. */
export function transcriptLine(text: string): { readonly speaker: string; readonly text: string } {
  const match = /^([^:\n]{1,40}):\s*(.+)$/s.exec(text.trim());
  return match === null ? { speaker: 'caller', text: text.trim() } : { speaker: match[1]!.trim(), text: match[2]!.trim() };
}

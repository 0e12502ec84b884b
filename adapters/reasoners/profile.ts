/** The capability profile (1.4, 2.4) of a reasoner that knows itself: the builtin, and `openai` (its model). */
import { ENVELOPE_VERSION, SCHEMA_VERSION, type CapabilityProfile } from '../../protocol/index.js';

export type ProfileLimits = CapabilityProfile['limits'];

/** What a profile says when the plugin does not say otherwise: one job at a time, payloads up to 1 MiB (the relay's body limit, PROTOCOL.md 1.10). */
export const DEFAULT_PROFILE_LIMITS: ProfileLimits = { max_concurrent_jobs: 1, max_payload_bytes: 1_048_576 };

export const SKILLS: CapabilityProfile['skills'] = [
  { name: 'live_analysis', description: 'insights from the newest part of a live call transcript' },
  { name: 'session_summary', description: 'a summary, action items and decisions from a finished call' },
];

export interface ProfileOptions {
  readonly providerKind: string;
  readonly models: CapabilityProfile['models'];
  readonly limits?: ProfileLimits;
}

export function capabilityProfile({ providerKind, models, limits = DEFAULT_PROFILE_LIMITS }: ProfileOptions): CapabilityProfile {
  return {
    profile_version: 1,
    provider_kind: providerKind,
    skills: SKILLS,
    models,
    tools: [],
    limits,
    schema_versions: { min: SCHEMA_VERSION, max: SCHEMA_VERSION },
    envelope_versions: { min: ENVELOPE_VERSION, max: ENVELOPE_VERSION },
  };
}

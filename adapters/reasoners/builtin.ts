/**
 * The `builtin` reasoner: no model, answers every purpose from its payload alone, deterministically (the same
 * payload gives the same result), by the rules of call-reading.ts. For tests, the demo, and a plugin with nothing
 * better wired in yet.
 */
import { z } from 'zod';
import { ReasonerError, type Reasoner, type ReasoningRequest } from './reasoner.js';
import { PURPOSES, type CapabilityProfile, type JobPurpose } from '../../protocol/index.js';
import { jobEnd } from './deadline.js';
import { capabilityProfile, type ProfileLimits } from './profile.js';
import { clip, conformingResult } from './result.js';
import { callSummary, liveInsights } from './call-answers.js';

export interface BuiltinReasonerOptions {
  /** Named in the capability profile. */
  readonly providerKind: string;
  /** Named in the capability profile; none by default (the builtin runs no model). */
  readonly models?: CapabilityProfile['models'];
  readonly limits?: ProfileLimits;
}

export function builtinReasoner({ providerKind, models = [], limits }: BuiltinReasonerOptions): Reasoner {
  const answers: Record<JobPurpose, (payload: unknown) => Record<string, unknown>> = {
    live_analysis: (payload) => ({ insights: liveInsights(PURPOSES.live_analysis.payload.parse(payload).transcript) }),
    session_summary: (payload) => {
      const { transcript, notes } = PURPOSES.session_summary.payload.parse(payload);
      return callSummary(transcript, notes);
    },
    capability_probe: (payload) => {
      PURPOSES.capability_probe.payload.parse(payload);
      return capabilityProfile({ providerKind, models, ...(limits ? { limits } : {}) });
    },
  };
  return {
    name: 'builtin',
    async reason(request: ReasoningRequest) {
      // The answer is computed at once: only a job that has already ended is refused.
      const end = jobEnd(request);
      try {
        if (end.signal.aborted) throw end.failure();
        return conformingResult(request.response_schema, answers[request.purpose](request.payload));
      } catch (error) {
        if (error instanceof z.ZodError)
          throw new ReasonerError('invalid_payload', clip(`the ${request.purpose} payload is malformed: ${z.prettifyError(error)}`, 2_000));
        throw error;
      } finally {
        end.dispose();
      }
    },
  };
}

/**
 * What a reasoner that is not built in is asked: the purpose's instructions, the payload, and the schema the
 * answer must follow. The `command` reasoner gets this object as JSON on stdin; the `openai` one turns it
 * into chat messages.
 */
import type { ReasoningRequest } from './reasoner.js';
import type { JobPurpose } from '../../protocol/index.js';

/** Each purpose's task, in words a model follows (the payload and result schemas say the rest). */
export const INSTRUCTIONS: Record<JobPurpose, string> = {
  live_analysis:
    'You assist someone during a live call. From the newest part of its transcript and the standing context, ' +
    'give the few insights worth showing them right now, most important first: a suggestion, a risk, a question ' +
    'to ask, or a fact to recall, each with your confidence from 0 to 1. Give an empty list when nothing is worth showing.',
  session_summary:
    'Summarise a finished call from its transcript and notes: a short summary, the action items (with their owner ' +
    'when the call names one), and the decisions taken. Use only what the transcript says.',
  capability_probe: 'Describe yourself as a capability profile: your skills, the models you run, the tools you can use, and your limits.',
};

export interface ReasoningPrompt {
  readonly job_id: string;
  readonly purpose: JobPurpose;
  /** ISO 8601, UTC. */
  readonly deadline_at: string;
  readonly instructions: string;
  readonly payload: Record<string, unknown>;
  readonly response_schema: Record<string, unknown>;
}

export function promptOf(request: ReasoningRequest): ReasoningPrompt {
  return {
    job_id: request.job_id,
    purpose: request.purpose,
    deadline_at: new Date(request.deadline_at).toISOString(),
    instructions: INSTRUCTIONS[request.purpose],
    payload: request.payload,
    response_schema: request.response_schema,
  };
}

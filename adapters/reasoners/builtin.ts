/**
 * The `builtin` reasoner: no model, answers every purpose from its payload alone, deterministically (the same
 * payload gives the same result). For tests, the demo, and a plugin with nothing better wired in yet.
 */
import { z } from 'zod';
import { ReasonerError, type Reasoner, type ReasoningRequest } from './reasoner.js';
import { PURPOSES, type CapabilityProfile, type JobPurpose } from '../../protocol/index.js';
import { jobEnd } from './deadline.js';
import { capabilityProfile, type ProfileLimits } from './profile.js';
import { clip, conformingResult } from './result.js';

export interface BuiltinReasonerOptions {
  /** Named in the capability profile. */
  readonly providerKind: string;
  /** Named in the capability profile; none by default (the builtin runs no model). */
  readonly models?: CapabilityProfile['models'];
  readonly limits?: ProfileLimits;
}

type Utterance = z.infer<typeof PURPOSES.live_analysis.payload>['transcript'][number];
type Insight = z.infer<typeof PURPOSES.live_analysis.result>['insights'][number];

// Words that mark a line as a worry, a commitment or a decision (English only: the builtin is a stand-in, not a model).
const RISK = /\b(risks?|risky|concerns?|concerned|worried|problems?|issues?|delays?|delayed|blockers?|blocked|expensive|over budget)\b/i;
const COMMITMENT = /\b(I'll|I will|we'll|we will|will send|will follow up|follow up|to ?do|action item)\b/i;
const DECISION = /\b(decided|decision|we agree|agreed|let's go with|we'll go with|go ahead with)\b/i;

export function builtinReasoner({ providerKind, models = [], limits }: BuiltinReasonerOptions): Reasoner {
  const answers: Record<JobPurpose, (payload: unknown) => Record<string, unknown>> = {
    live_analysis: (payload) => ({ insights: insightsOf(PURPOSES.live_analysis.payload.parse(payload).transcript) }),
    session_summary: (payload) => summaryOf(PURPOSES.session_summary.payload.parse(payload)),
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
        if (error instanceof z.ZodError) throw new ReasonerError('invalid_payload', clip(`the ${request.purpose} payload is malformed: ${z.prettifyError(error)}`, 2_000));
        throw error;
      } finally {
        end.dispose();
      }
    },
  };
}

const said = (utterances: readonly Utterance[]) => utterances.filter((u) => u.text.trim().length > 0);

/** `speaker: "text"`, cut to fit `max` characters. */
function quote(u: Utterance, max: number): string {
  return clip(`${u.speaker}: "${u.text.trim()}"`, max);
}

/** The newest worry, the newest open question, who dominates, and the newest figure: most important first. */
function insightsOf(transcript: readonly Utterance[]): Insight[] {
  const lines = said(transcript);
  const newest = (test: (u: Utterance) => boolean) => lines.findLast(test);
  const insights: Insight[] = [];
  const risk = newest((u) => RISK.test(u.text));
  if (risk) insights.push({ kind: 'risk', text: clip(`A concern was raised, ${quote(risk, 480)}`, 500), confidence: 0.6 });
  const question = newest((u) => u.text.trim().endsWith('?'));
  if (question) insights.push({ kind: 'question', text: clip(`Still to answer, ${quote(question, 480)}`, 500), confidence: 0.5 });
  const words = new Map<string, number>();
  for (const u of lines) words.set(u.speaker, (words.get(u.speaker) ?? 0) + u.text.split(/\s+/).filter(Boolean).length);
  const total = [...words.values()].reduce((a, b) => a + b, 0);
  const [top, count] = [...words.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0] ?? ['', 0];
  if (words.size > 1 && count / total > 0.6) {
    insights.push({ kind: 'suggestion', text: clip(`${top} has said ${Math.round((100 * count) / total)}% of the words so far: invite the others in.`, 500), confidence: 0.4 });
  }
  const figure = newest((u) => /\d/.test(u.text));
  if (figure) insights.push({ kind: 'fact', text: clip(`A figure was mentioned, ${quote(figure, 480)}`, 500), confidence: 0.3 });
  return insights;
}

function summaryOf({ transcript, notes }: z.infer<typeof PURPOSES.session_summary.payload>): Record<string, unknown> {
  const lines = said(transcript);
  const speakers = [...new Set(lines.map((u) => u.speaker))];
  const parts = [`${lines.length} ${lines.length === 1 ? 'utterance' : 'utterances'} from ${speakers.join(', ') || 'nobody'}.`];
  const [first, last] = [lines[0], lines.at(-1)];
  if (first) parts.push(`It began with ${quote(first, 300)}`);
  if (last && last !== first) parts.push(`and ended with ${quote(last, 300)}`);
  if (notes?.trim()) parts.push(`Notes: ${clip(notes.trim(), 1_000)}`);
  return {
    summary: clip(parts.join(' '), 20_000),
    action_items: lines.filter((u) => COMMITMENT.test(u.text)).slice(0, 100).map((u) => ({ text: clip(u.text.trim(), 1_000), owner: clip(u.speaker, 200) })),
    decisions: lines.filter((u) => DECISION.test(u.text)).slice(0, 100).map((u) => clip(u.text.trim(), 1_000)),
  };
}

/**
 * Live insights through a reasoner (4.4): an agent for `insights:` sessions that hands the call's
 * transcript so far (the earlier lines from the session's memory, then this one) to a reasoner as a
 * `live_analysis`, and replies with its most confident insight not surfaced before in the session (an
 * analysis of the whole call keeps finding the early ones), in one sentence, or `none`. Every other
 * session goes to the chat agent. The transcript lines are `Speaker: text` (a line without a speaker is
 * the caller's). The session's `system_prelude` (situation, playbook) is the analysis's context.
 */
import type { Agent, Turn } from '../../engine/chat/agent.js';
import type { Reasoner } from '../reasoners/reasoner.js';
import { PURPOSES, jsonSchemaOf, transcriptLine } from '../../protocol/index.js';

/** How long one line's analysis may take before the line gets `none`. */
const ANALYSIS_MS = 10_000;
const RESULT_SCHEMA = jsonSchemaOf(PURPOSES.live_analysis.result);

function transcriptOf(turn: Turn) {
  return [...turn.memory.filter((entry) => entry.role === 'user').map((entry) => transcriptLine(entry.text)), transcriptLine(turn.text)];
}

export function insightsAgent(reasoner: Reasoner, chat: Agent): Agent {
  return {
    name: `${chat.name}+insights(${reasoner.name})`,
    async respond(turn, reply) {
      if (!turn.insights) return chat.respond(turn, reply);
      const deadline_at = Date.now() + ANALYSIS_MS;
      const signal = AbortSignal.any([reply.signal, AbortSignal.timeout(ANALYSIS_MS)]);
      const result = await reasoner
        .reason({
          job_id: turn.task_id,
          purpose: 'live_analysis',
          payload: {
            session_id: turn.session_id,
            transcript: transcriptOf(turn),
            ...(turn.system_prelude === undefined ? {} : { context: turn.system_prelude }),
          },
          response_schema: RESULT_SCHEMA,
          deadline_at,
          signal,
        })
        .catch(() => undefined);
      const parsed = PURPOSES.live_analysis.result.safeParse(result);
      // What was said before is in memory as the host cut it (one sentence, maybe ending in …): a prefix.
      const said = turn.memory.filter((entry) => entry.role === 'assistant').map((entry) => entry.text.replace(/…$/, ''));
      const fresh = (text: string) => !said.some((earlier) => earlier !== 'none' && text.startsWith(earlier));
      const best = parsed.success
        ? [...parsed.data.insights].sort((a, b) => b.confidence - a.confidence).find((insight) => fresh(insight.text))
        : undefined;
      // The host cuts a message to one sentence on insights: sessions (PROTOCOL.md 3b.14).
      await reply.message(best?.text ?? 'none');
    },
  };
}

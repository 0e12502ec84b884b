/**
 * The `approvals` agent: a test double for an assistant that asks before it acts. An approval is ordinary
 * text the agent interprets itself, in a new task of the same session (3.1 rule 2, 7 rule 4), and this
 * agent shows a client exactly that:
 *
 * - a request is answered with what the agent is about to do and the question `Reply /approve to go
 *   ahead or /deny to cancel.`;
 * - the next message decides: `/approve` (or yes, ok, go ahead, continue) carries the request out,
 *   shown as a tool call, then a message; `/deny` (or no, cancel, stop) drops it; anything else is a
 *   new request, and the old one is dropped unanswered.
 *
 * What waits for approval is read from the session's memory (the agent's own last message), so it holds
 * across a restart of the host. On `insights:` sessions it has nothing to say: `none`.
 */
import type { Agent, MemoryEntry } from '../../engine/chat/agent.js';

const QUESTION = 'Reply /approve to go ahead or /deny to cancel.';
const PROPOSAL = /^About to: (.+)\. Reply \/approve to go ahead or \/deny to cancel\.$/s;
const APPROVE = /^\/?(approve|approved|yes|y|ok|okay|go ahead|continue)[.!]?$/i;
const DENY = /^\/?(deny|denied|no|n|cancel|stop)[.!]?$/i;

/** The request the agent's last message asked approval for, if its last message was such a question. */
function awaitingApproval(memory: readonly MemoryEntry[]): string | undefined {
  const last = memory.findLast((entry) => entry.role === 'assistant');
  return last === undefined ? undefined : PROPOSAL.exec(last.text)?.[1];
}

export const approvalsAgent: Agent = {
  name: 'approvals',
  async respond(turn, reply) {
    if (turn.insights) return reply.message('none');
    const text = turn.text.trim();
    const pending = awaitingApproval(turn.memory);
    if (APPROVE.test(text) || DENY.test(text)) {
      if (pending === undefined) return reply.message('Nothing is waiting for your approval.');
      if (DENY.test(text)) return reply.message(`Cancelled: ${pending}.`);
      await reply.toolCall(`carrying out: ${pending}`);
      return reply.message(`Done: ${pending}.`);
    }
    await reply.typing('thinking');
    await reply.message(`About to: ${text.replace(/[.!?\s]+$/, '')}. ${QUESTION}`);
  },
};

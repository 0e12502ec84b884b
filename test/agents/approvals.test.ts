/**
 * The `approvals` agent: an approval is ordinary text in a new task, read against what the agent asked
 * last (3.1 rule 2, 7 rule 4); what waits for approval comes from the session's memory alone.
 */
import { describe, expect, it } from 'vitest';
import { approvalsAgent } from '../../adapters/agents/index.js';
import type { MemoryEntry, ReplySink, Turn } from '../../engine/chat/agent.js';

/** Runs one turn and returns what the agent said, in order. */
async function turn(text: string, memory: MemoryEntry[] = [], insights = false): Promise<string[]> {
  const said: string[] = [];
  const note = (what: string) => async () => void said.push(what);
  const sink: ReplySink = {
    typing: async (label) => void said.push(`typing ${label}`),
    toolCall: async (label) => void said.push(`tool_call ${label}`),
    message: async (reply) => void said.push(`message ${reply}`),
    completed: note('completed'),
    silent: note('silent'),
    errored: async (code) => void said.push(`errored ${code}`),
    endSession: note('end'),
    signal: new AbortController().signal,
  };
  const given: Turn = { session_id: insights ? 'insights:c' : 's', task_id: 't', text, system_prelude: undefined, memory, insights };
  await approvalsAgent.respond(given, sink);
  return said;
}

const entry = (role: MemoryEntry['role'], text: string): MemoryEntry => ({ role, text, task_id: 't0', at: 0 });
const asked = (request: string): MemoryEntry[] => [
  entry('user', request),
  entry('assistant', `About to: ${request}. Reply /approve to go ahead or /deny to cancel.`),
];

describe('the approvals agent', () => {
  it('asks before it acts', async () => {
    expect(await turn('Send the pricing sheet.')).toEqual([
      'typing thinking',
      'message About to: Send the pricing sheet. Reply /approve to go ahead or /deny to cancel.',
    ]);
  });

  it('carries out what it asked about on /approve and its spellings, as a tool call and a message', async () => {
    for (const approval of ['/approve', 'yes', 'Go ahead', 'continue!']) {
      expect(await turn(approval, asked('Send the pricing sheet'))).toEqual([
        'tool_call carrying out: Send the pricing sheet',
        'message Done: Send the pricing sheet.',
      ]);
    }
  });

  it('drops it on /deny', async () => {
    expect(await turn('/deny', asked('Send the pricing sheet'))).toEqual(['message Cancelled: Send the pricing sheet.']);
  });

  it('has nothing to approve when its last message asked nothing, even if an earlier one did', async () => {
    expect(await turn('/approve')).toEqual(['message Nothing is waiting for your approval.']);
    const answered = [...asked('Send the pricing sheet'), entry('user', '/approve'), entry('assistant', 'Done: Send the pricing sheet.')];
    expect(await turn('/approve', answered)).toEqual(['message Nothing is waiting for your approval.']);
  });

  it('takes anything else as a new request, and says none on insights sessions', async () => {
    expect(await turn('Book a room', asked('Send the pricing sheet'))).toEqual([
      'typing thinking',
      'message About to: Book a room. Reply /approve to go ahead or /deny to cancel.',
    ]);
    expect(await turn('Maya: hello', [], true)).toEqual(['message none']);
  });
});

/** The `echo` agent: says it is thinking, then repeats the user's text. */
import type { Agent } from '../../engine/chat/agent.js';

export const echoAgent: Agent = {
  name: 'echo',
  async respond(turn, reply) {
    await reply.typing('thinking');
    await reply.message(turn.text);
  },
};

/**
 * An assistant host with an agent of your own. The host takes each message a client sends as a task,
 * logs it, and hands it to your agent; what the agent says is logged and streamed back to the client,
 * which gets every reply exactly once, across dropped connections and restarts of the host.
 *
 *   npx tsx examples/host-with-agent.ts
 *
 * It starts the host on 127.0.0.1 (a free port), asks it two questions as a client app would, prints
 * the replies, and stops. Your own host would keep serving instead (see the end of the file).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAssistantHost, type Agent } from 'assistant-relay';
import { FormAClient } from 'assistant-relay/client';

// An agent is a name and `respond`, called once per task after the task is in the log. It answers
// through `reply`: progress (`typing`, `toolCall`) is shown live only; `message` is the one answer that
// settles the task. `turn.memory` holds the session's earlier turns, oldest first.
const wordCounter: Agent = {
  name: 'word-counter',
  async respond(turn, reply) {
    await reply.typing('counting');
    const words = turn.text.split(/\s+/).filter((word) => word !== '').length;
    const earlier = turn.memory.filter((entry) => entry.role === 'user').length;
    await reply.message(`${words} words; your earlier messages in this session: ${earlier}`);
  },
};

// The host keeps its event log in one SQLite file; here a temporary one.
const folder = mkdtempSync(join(tmpdir(), 'assistant-relay-example-'));
// Clients present this token. Yours: a long random secret, e.g. randomBytes(32).toString('base64url').
const token = 'example-token';
const host = await createAssistantHost({ db: join(folder, 'host.db'), token, agent: wordCounter });
const url = await host.listen({ port: 0 });
console.log(`host listening on ${url}`);

try {
  // What a client app does (examples/chat-and-job.ts shows more): each `send` is a task, `reply` its answer.
  const client = new FormAClient({ url, token });
  for (const text of ['How many words is this?', 'And this one?']) {
    const reply = await client.send('example-session', text).reply;
    console.log(`you: ${text}`);
    console.log(`agent: ${reply.status === 'message' ? reply.reply_text : `(${reply.status})`}`);
  }
  client.close();
} finally {
  // A host you run would stay up until it is told to stop, e.g.:
  //   process.once('SIGTERM', () => void host.close());
  await host.close();
  rmSync(folder, { recursive: true, force: true });
}

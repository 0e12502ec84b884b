/**
 * A client app: it chats with an assistant host (Form A: each message a task, its replies on a stream
 * that picks up where it left off), then asks the assistant, through the backend relay, for a reasoning
 * job (a live analysis of a call) and follows it until it ends. It imports only `assistant-relay/client`,
 * which runs in browsers and mobile apps too.
 *
 *   npx tsx examples/chat-and-job.ts
 *
 * starts an assistant of its own on 127.0.0.1 (a host with the builtin `echo` agent, and a backend relay
 * whose jobs the host's plugin answers with the builtin reasoner). Against yours, name them:
 *
 *   ASSISTANT_URL=http://127.0.0.1:8787 ASSISTANT_TOKEN=… \
 *   BACKEND_URL=http://127.0.0.1:8788 INTEGRATION_ID=… CLIENT_TOKEN=… npx tsx examples/chat-and-job.ts
 */
import { join } from 'node:path';
import { BackendClient, FormAClient, JobsClient } from 'assistant-relay/client';

interface Assistant {
  readonly assistantUrl: string;
  readonly assistantToken: string;
  readonly backendUrl: string;
  readonly integrationId: string;
  readonly clientToken: string;
  close(): Promise<void>;
}

const assistant = process.env.ASSISTANT_URL === undefined ? await startAssistant() : fromEnvironment();

try {
  // The chat channel: one session (any id the app chooses), two messages, each answered once.
  const chat = new FormAClient({ url: assistant.assistantUrl, token: assistant.assistantToken });
  const session = `example-${crypto.randomUUID()}`;
  for (const text of ['Hello!', 'Can you hear me?']) {
    console.log(`you: ${text}`);
    const task = chat.send(session, text);
    // Progress (typing, tool calls) comes as it happens, before the one terminal reply.
    task.onProgress((progress) => console.log(`  (${progress.status}: ${progress.label})`));
    const reply = await task.reply;
    console.log(`assistant: ${reply.status === 'message' ? reply.reply_text : `(${reply.status})`}`);
  }
  chat.close();

  // The reasoning channel: the integration's client creates a job; the assistant's plugin takes it,
  // runs its reasoner, and posts a result the client checks against the purpose's schema.
  const integration = new BackendClient(
    `${assistant.backendUrl}/api/v1/assistant/integrations/${encodeURIComponent(assistant.integrationId)}`,
    assistant.clientToken,
  );
  const jobs = new JobsClient(integration, assistant.integrationId);
  const transcript = [
    { speaker: 'Maya', text: 'Can you send the questionnaire by Friday?' },
    { speaker: 'Maya', text: 'The pilot starts in March for 40 seats.' },
    { speaker: 'Daniel', text: 'I am worried about the delay on the security review.' },
  ];
  const created = await jobs.create({ purpose: 'live_analysis', payload: { session_id: session, transcript }, deadline_ms: 30_000 });
  console.log(`job ${created.job_id}: ${created.state}`);
  const ended = await jobs.follow(created, (view) => console.log(`job ${view.job_id}: ${view.state}`));
  const insights = (ended.result?.insights ?? []) as Array<{ kind: string; text: string }>;
  for (const insight of insights) console.log(`insight (${insight.kind}): ${insight.text}`);
  if (ended.error !== undefined) console.log(`job failed: ${ended.error.code}: ${ended.error.message}`);
} finally {
  await assistant.close();
}

function fromEnvironment(): Assistant {
  const need = (name: string) => process.env[name] ?? fail(`set ${name} too (or none of them, for an assistant of the example's own)`);
  return {
    assistantUrl: need('ASSISTANT_URL'),
    assistantToken: need('ASSISTANT_TOKEN'),
    backendUrl: need('BACKEND_URL'),
    integrationId: need('INTEGRATION_ID'),
    clientToken: need('CLIENT_TOKEN'),
    close: async () => {},
  };
}

function fail(message: string): never {
  throw new Error(message);
}

/** Only so that the example runs by itself: an assistant on 127.0.0.1, as `examples/host-with-agent.ts` starts one. */
async function startAssistant(): Promise<Assistant> {
  // Server-side code, loaded only here: the client itself needs none of it.
  const { createAssistantHost, builtinReasoner } = await import('assistant-relay');
  const { startLocalBackend } = await import('./local-backend.js');
  const backend = await startLocalBackend();
  const token = 'example-token';
  const host = await createAssistantHost({
    db: join(backend.folder, 'host.db'),
    token,
    agent: 'echo',
    // The same process runs the assistant's plugin: it takes the integration's jobs from the backend.
    backend: {
      url: backend.url,
      integration: backend.integrationId,
      relayToken: backend.relayToken,
      reasoner: builtinReasoner({ providerKind: 'assistant-relay' }),
    },
  });
  return {
    assistantUrl: await host.listen({ port: 0 }),
    assistantToken: token,
    backendUrl: backend.url,
    integrationId: backend.integrationId,
    clientToken: backend.clientToken,
    async close() {
      await host.close();
      await backend.close();
    },
  };
}

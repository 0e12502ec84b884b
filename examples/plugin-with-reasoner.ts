/**
 * An assistant plugin with a reasoner of your own. The plugin holds a stream open to the backend relay,
 * takes its integration's jobs, runs each once through the reasoner (with the job's deadline as an abort
 * signal), checks the result against the job's response_schema and posts it. Its own event log records
 * where each job stands, so that a plugin killed mid-job picks up exactly where it was.
 *
 *   npx tsx examples/plugin-with-reasoner.ts
 *
 * starts a backend relay of its own on 127.0.0.1, answers one job a client creates there, prints it, and
 * stops. Against your backend it serves until Ctrl-C:
 *
 *   BACKEND_URL=http://127.0.0.1:8788 INTEGRATION_ID=… RELAY_TOKEN=… npx tsx examples/plugin-with-reasoner.ts
 */
import { join } from 'node:path';
import { builtinReasoner, startPlugin, type Reasoner } from 'assistant-relay';

interface Utterance {
  readonly speaker: string;
  readonly text: string;
}

// What the builtin answers, for the purposes this reasoner leaves to it (summaries, capability probes).
const builtin = builtinReasoner({ providerKind: 'assistant-relay' });

// A reasoner: a name and `reason`, one job in, one JSON result out. A rejection fails the job (with the
// code of a `ReasonerError`, else `reasoner_error`); a model would be called here, with `request.signal`.
const moneyTalk: Reasoner = {
  name: 'money-talk',
  async reason(request) {
    if (request.purpose !== 'live_analysis') return builtin.reason(request);
    const transcript = request.payload.transcript as readonly Utterance[];
    const mentions = transcript.filter((line) => /\b(price|pricing|budget|cost|discount)\b/i.test(line.text));
    // The result must follow `request.response_schema`; the plugin checks it before posting.
    return {
      insights: mentions.slice(-3).map((line) => ({
        text: `${line.speaker} talked money: ${line.text}`.slice(0, 500),
        kind: 'fact',
        confidence: 0.8,
      })),
    };
  },
};

if (process.env.BACKEND_URL === undefined) await answerOneJob();
else await serve(process.env.BACKEND_URL);

/** Against your backend: the integration's id and RELAY_TOKEN come from pairing or from its operator. */
async function serve(backendUrl: string): Promise<void> {
  const need = (name: string) => process.env[name] ?? fail(`set ${name} too`);
  const plugin = await startPlugin({
    backendUrl,
    integrationId: need('INTEGRATION_ID'),
    relayToken: need('RELAY_TOKEN'),
    reasoner: moneyTalk,
    // What a restart picks up from: keep it where it lasts.
    db: process.env.PLUGIN_DB ?? 'example-plugin.db',
    providerKind: 'assistant-relay',
  });
  console.log('plugin started; Ctrl-C stops it');
  await new Promise((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
  await plugin.stop();
}

function fail(message: string): never {
  throw new Error(message);
}

/** Only so that the example runs by itself: a backend of its own, and one job created as a client would. */
async function answerOneJob(): Promise<void> {
  const { startLocalBackend } = await import('./local-backend.js');
  const { BackendClient, JobsClient } = await import('assistant-relay/client');
  const backend = await startLocalBackend();
  const plugin = await startPlugin({
    backendUrl: backend.url,
    integrationId: backend.integrationId,
    relayToken: backend.relayToken,
    reasoner: moneyTalk,
    db: join(backend.folder, 'plugin.db'),
    providerKind: 'assistant-relay',
  });
  try {
    const client = new BackendClient(`${backend.url}/api/v1/assistant/integrations/${backend.integrationId}`, backend.clientToken);
    const jobs = new JobsClient(client, backend.integrationId);
    const transcript = [
      { speaker: 'Maya', text: 'Our budget for the pilot is 20k.' },
      { speaker: 'Daniel', text: 'The price per seat drops after 50 seats.' },
    ];
    const created = await jobs.create({ purpose: 'live_analysis', payload: { session_id: 'call-1', transcript }, deadline_ms: 30_000 });
    const ended = await jobs.follow(created);
    console.log(`job ${ended.job_id}: ${ended.state}`);
    console.log(JSON.stringify(ended.result, null, 2));
  } finally {
    await plugin.stop();
    await backend.close();
  }
}

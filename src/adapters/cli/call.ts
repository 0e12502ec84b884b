/**
 * `assistant-relay call`: plays a recorded call. Each line of the transcript goes into the call's
 * Insights session as it is said (one `--pace` apart), and insights are printed as they come; with
 * `--keys`, the post-call summary is then asked for as a BYO job and printed once it is opened and
 * checked. `--json` prints one JSON object per line instead, for scripts.
 */
import { readFileSync } from 'node:fs';
import { transcriptLine } from '../../protocol/index.js';
import { FormAClient } from '../client/form-a.js';
import { InsightsRecording } from '../client/insights.js';
import { JobsClient } from '../client/jobs.js';
import { integrationClient, keysFileFlag, runClientCommand } from './client.js';
import { ClientKeysFile, keyringOfFile } from '../byo/keys-file.js';
import { UsageError, baseUrlFlag, parseDuration, readFlags, requiredFlag } from './flags.js';
import { readTokenFile } from './service.js';

export const CALL_USAGE = `usage: assistant-relay call --url URL --token-file FILE --transcript FILE [options]
  --url URL                the assistant host's base URL
  --token-file FILE        its ASSISTANT_TOKEN (a private file)
  --transcript FILE        the call, one "Speaker: text" line each
  --session S              the call's session (default a fresh one); insights go to insights:S
  --pace D                 the time between two lines, e.g. 500ms (default 300ms)
  --keys FILE              a client's keys file (assistant-relay pair): ask for the summary as a BYO job
  --json                   one JSON object per line (line, insight, job, summary)
Each flag may also be set as ASSISTANT_RELAY_<FLAG>.`;

const FLAGS = {
  url: { type: 'string' },
  'token-file': { type: 'string' },
  transcript: { type: 'string' },
  session: { type: 'string' },
  pace: { type: 'string' },
  keys: { type: 'string' },
  json: { type: 'boolean' },
} as const;

const PRELUDE = 'A recorded sales call, played line by line. Answer each line with one short sentence worth acting on, or none.';

export function callCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand('call', async () => {
    const flags = readFlags(argv, FLAGS, env);
    const url = baseUrlFlag('url', requiredFlag(flags, 'url'));
    const token = readTokenFile(requiredFlag(flags, 'token-file'), { create: false });
    const file = requiredFlag(flags, 'transcript');
    let lines: string[];
    try {
      lines = readFileSync(file, 'utf8').split('\n').map((line) => line.trim()).filter(Boolean);
    } catch (error) {
      throw new UsageError(`--transcript ${file}: ${(error as Error).message}`);
    }
    const paceMs = parseDuration('pace', flags('pace') ?? '300ms');
    const session = flags('session') ?? `call-${crypto.randomUUID().slice(0, 8)}`;
    const json = flags('json') === true;
    const show = (kind: string, fields: Record<string, unknown>, text: string) => process.stdout.write(json ? `${JSON.stringify({ kind, session, ...fields })}\n` : `${text}\n`);

    const client = new FormAClient({ url, token });
    const recording = await InsightsRecording.start(client, session, PRELUDE);
    let shown = 0;
    recording.store.subscribe(({ context }) => {
      for (const insight of context.insights.slice(shown)) show('insight', { text: insight.text }, `    ★ ${insight.text}`);
      shown = context.insights.length;
    });
    for (const line of lines) {
      show('line', { text: line }, line);
      recording.line(line);
      await new Promise((resolve) => setTimeout(resolve, paceMs));
    }
    await recording.stop();
    client.close();

    const keysFile = flags('keys');
    if (keysFile === undefined) return;
    const keys = keysFileFlag(keysFile, ClientKeysFile);
    const jobs = new JobsClient(integrationClient(keys.backend, keys.integration_id, keys.client_token), keyringOfFile(keys));
    const created = await jobs.create({ purpose: 'session_summary', payload: { session_id: session, transcript: lines.map(transcriptLine) }, deadline_ms: 60_000 });
    const done = await jobs.follow(created, (view) => show('job', { job_id: view.job_id, state: view.state }, `  (summary: ${view.state})`));
    if (done.state !== 'completed') throw new Error(`the summary job ended ${done.state}${done.error ? `: ${done.error.code}` : ''}`);
    const summary = done.result as { summary: string; action_items: Array<{ text: string; owner?: string }>; decisions: string[] };
    show('summary', summary, [
      `Summary: ${summary.summary}`,
      ...summary.action_items.map((item) => `  - ${item.text}${item.owner === undefined ? '' : ` (${item.owner})`}`),
      ...summary.decisions.map((decision) => `  ✓ ${decision}`),
    ].join('\n'));
  });
}

/**
 * `assistant-relay call`: plays a recorded call. Each line of the transcript goes into the call's
 * Insights session as it is said (one `--pace` apart), and insights are printed as they come; with
 * `--keys`, the post-call summary is then asked for as a BYO job and printed once it is opened and
 * checked. `--json` prints one JSON object per line instead, for scripts.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { PURPOSES, transcriptLine, type JobView } from '../../protocol/index.js';
import { packageFile } from '../../protocol/package-files.js';
import { FormAClient } from '../client/form-a.js';
import { InsightsRecording, type Insight } from '../client/insights.js';
import { JobsClient } from '../client/jobs.js';
import { integrationClient, keysFileFlag, runClientCommand } from './client.js';
import { ClientKeysFile, keyringOfFile } from '../../storage/keys-file.js';
import { UsageError, baseUrlFlag, parseDuration, readFlags, requiredFlag } from './flags.js';
import { readTokenFile } from './service.js';

export const CALL_USAGE = `usage: assistant-relay call --url URL --token-file FILE --transcript FILE [options]
  --url URL                the assistant host's base URL
  --token-file FILE        its ASSISTANT_TOKEN (a private file)
  --transcript FILE        the call, one "Speaker: text" line each
  --session S              the call's session (default a fresh one); insights go to insights:S
  --pace D                 the time from a line's answer to the next line, e.g. 500ms (default 300ms)
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

/** The bundled sample call (`samples/sales-call.txt`), written for this project. */
export const SAMPLE_CALL = fileURLToPath(packageFile('samples/sales-call.txt', import.meta.url, 2));

/** A transcript's lines, one `Speaker: text` each; blank lines are left out. */
export function readTranscript(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
  } catch (error) {
    throw new UsageError(`--transcript ${file}: ${(error as Error).message}`);
  }
}

/**
 * Plays a call into its `insights:` session: each line `paceMs` after the one before has its answer, each
 * insight handed to `onInsight` as it comes. Resolves once every line has its answer, with the insights.
 * A recording can wait where a speaker cannot: lines sent at once may reach the host out of order, and each
 * analysis must read the call as it went, with the insights before it (so that none is said twice).
 */
export async function playCall(
  client: FormAClient,
  session: string,
  lines: readonly string[],
  options: { readonly paceMs: number; readonly onLine: (line: string) => void; readonly onInsight: (insight: Insight) => void },
): Promise<readonly Insight[]> {
  const recording = await InsightsRecording.start(client, session, PRELUDE);
  let shown = 0;
  recording.store.subscribe(({ context }) => {
    for (const insight of context.insights.slice(shown)) options.onInsight(insight);
    shown = context.insights.length;
  });
  const answered = () => recording.store.getSnapshot().context.pending === 0;
  for (const line of lines) {
    options.onLine(line);
    recording.line(line);
    await new Promise<void>((resolve) => {
      const subscription = recording.store.subscribe(() => answered() && (subscription.unsubscribe(), resolve()));
      if (answered()) (subscription.unsubscribe(), resolve());
    });
    await new Promise((resolve) => setTimeout(resolve, options.paceMs));
  }
  await recording.stop();
  return recording.store.getSnapshot().context.insights;
}

export type CallSummary = z.infer<typeof PURPOSES.session_summary.result>;

/** Asks for the call's summary as a job (BYO when `jobs` holds keys) and follows it to its end; `onState` sees each state once. */
export async function summarizeCall(
  jobs: JobsClient,
  session: string,
  lines: readonly string[],
  onState: (view: JobView) => void,
): Promise<{ readonly job: JobView; readonly summary: CallSummary }> {
  let state: JobView['state'] | undefined;
  const changed = (view: JobView) => {
    if (view.state !== state) onState(view);
    state = view.state;
  };
  const created = await jobs.create({
    purpose: 'session_summary',
    payload: { session_id: session, transcript: lines.map(transcriptLine) },
    deadline_ms: 60_000,
  });
  changed(created);
  const done = await jobs.follow(created, changed);
  if (done.state !== 'completed') throw new Error(`the summary job ended ${done.state}${done.error ? `: ${done.error.code}` : ''}`);
  return { job: done, summary: PURPOSES.session_summary.result.parse(done.result) };
}

/** A summary as a person reads it: the summary, then `- action (owner)` and `✓ decision` lines. */
export function summaryLines(summary: CallSummary): string[] {
  return [
    `Summary: ${summary.summary}`,
    ...summary.action_items.map((item) => `  - ${item.text}${item.owner === undefined ? '' : ` (${item.owner})`}`),
    ...summary.decisions.map((decision) => `  ✓ ${decision}`),
  ];
}

export function callCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand('call', async () => {
    const flags = readFlags(argv, FLAGS, env);
    const url = baseUrlFlag('url', requiredFlag(flags, 'url'));
    const token = readTokenFile(requiredFlag(flags, 'token-file'), { create: false });
    const lines = readTranscript(requiredFlag(flags, 'transcript'));
    const paceMs = parseDuration('pace', flags('pace') ?? '300ms');
    const session = flags('session') ?? `call-${crypto.randomUUID().slice(0, 8)}`;
    const json = flags('json') === true;
    const show = (kind: string, fields: Record<string, unknown>, text: string) =>
      process.stdout.write(json ? `${JSON.stringify({ kind, session, ...fields })}\n` : `${text}\n`);

    const client = new FormAClient({ url, token });
    await playCall(client, session, lines, {
      paceMs,
      onLine: (line) => show('line', { text: line }, line),
      onInsight: (insight) => show('insight', { text: insight.text }, `    ★ ${insight.text}`),
    });
    client.close();

    const keysFile = flags('keys');
    if (keysFile === undefined) return;
    const keys = keysFileFlag(keysFile, ClientKeysFile);
    const jobs = new JobsClient(
      integrationClient(keys.backend, keys.integration_id, keys.client_token),
      keys.integration_id,
      keyringOfFile(keys),
    );
    const { summary } = await summarizeCall(jobs, session, lines, (view) =>
      show('job', { job_id: view.job_id, state: view.state }, `  (summary: ${view.state})`),
    );
    show('summary', summary, summaryLines(summary).join('\n'));
  });
}

/**
 * `assistant-relay job create|show|cancel`: the client's side of the reasoning channel from a terminal.
 * `create --wait` creates a job (a fresh `job_id` unless `--job` names one: the same id again is the same
 * job, so a retried command never runs it twice), follows it with a progress line on stderr until it
 * ends, and prints its result (or its view) as JSON on stdout; it exits 0 when the job completed, 1 when
 * it failed, expired or was cancelled.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { JobView, type JobPurpose } from '../../protocol/index.js';
import { BackendClient, CLIENT_FLAGS, CLIENT_USAGE, runClientCommand } from './client.js';
import { UsageError, parseDuration, readFlags, requiredFlag } from './flags.js';

export const JOB_USAGE = `usage: assistant-relay job create|show|cancel --backend URL --integration ID --client-token-file FILE [options]
${CLIENT_USAGE}
  create --purpose P       live_analysis, session_summary or capability_probe
         --payload FILE    the payload as a JSON file (default {})
         --deadline D      e.g. 30s, 5m (default 30s)
         --job ID          its job_id, a UUID (default a fresh one): the same again is the same job
         --wait            follow the job until it ends, and print its result
  show --job ID            print the job as it stands
  cancel --job ID          cancel an open job
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_BACKEND=http://127.0.0.1:8788.`;

const FLAGS = {
  ...CLIENT_FLAGS,
  purpose: { type: 'string' },
  payload: { type: 'string' },
  deadline: { type: 'string' },
  job: { type: 'string' },
  wait: { type: 'boolean' },
} as const;

/** The states a job leaves by itself (the rest are terminal). */
const OPEN_STATES: ReadonlySet<string> = new Set(['created', 'delivered', 'running']);

/** How often `--wait` asks how the job stands. */
const POLL_MS = 250;

function payloadFrom(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (error) {
    throw new UsageError(`--payload ${file}: ${(error as Error).message}`);
  }
}

export function jobCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand('job', () => runJobCommand(argv, env));
}

async function runJobCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [verb, ...rest] = argv;
  if (verb !== 'create' && verb !== 'show' && verb !== 'cancel') throw new UsageError(`job takes create, show or cancel, not ${JSON.stringify(verb ?? '')}`);
  const flags = readFlags(rest, FLAGS, env);
  const required = (flag: 'purpose' | 'job') => requiredFlag(flags, flag);
  const client = BackendClient.fromFlags(flags);
  let view: JobView;
  if (verb === 'create') {
    const purpose = required('purpose') as JobPurpose;
    const file = flags('payload');
    const payload = file === undefined ? {} : payloadFrom(file);
    const deadline_ms = parseDuration('deadline', flags('deadline') ?? '30s');
    view = await client.call(JobView, '/jobs', { method: 'POST', body: { job_id: flags('job') ?? randomUUID(), purpose, payload, deadline_ms } });
    if (flags('wait') === true) view = await follow(client, view);
  } else if (verb === 'show') {
    view = await client.call(JobView, `/jobs/${encodeURIComponent(required('job'))}`, { method: 'GET' });
  } else {
    view = await client.call(JobView, `/jobs/${encodeURIComponent(required('job'))}/cancel`, { method: 'POST' });
  }
  process.stdout.write(`${JSON.stringify(verb === 'create' && view.state === 'completed' ? view.result : view)}\n`);
  if (verb === 'create' && flags('wait') === true && view.state !== 'completed') process.exitCode = 1;
}

/** Asks how the job stands until it ends, saying so on stderr whenever that changes (one line, rewritten on a terminal). */
async function follow(client: BackendClient, created: JobView): Promise<JobView> {
  const tty = process.stderr.isTTY;
  let view = created;
  let said = '';
  for (;;) {
    const line = `job ${view.job_id}: ${view.state}${view.deliveries > 0 ? ` (delivered ${view.deliveries}×)` : ''}`;
    if (line !== said) process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
    said = line;
    if (!OPEN_STATES.has(view.state)) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    view = await client.call(JobView, `/jobs/${encodeURIComponent(view.job_id)}`, { method: 'GET' });
  }
  if (tty) process.stderr.write('\n');
  return view;
}

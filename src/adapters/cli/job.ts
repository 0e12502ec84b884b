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
import { UsageError, parseDuration, readFlags } from './flags.js';
import { readTokenFile } from './service.js';

export const JOB_USAGE = `usage: assistant-relay job create|show|cancel --backend URL --integration ID --client-token-file FILE [options]
  create --purpose P       live_analysis, session_summary or capability_probe
         --payload FILE    the payload as a JSON file (default {})
         --deadline D      e.g. 30s, 5m (default 30s)
         --job ID          its job_id, a UUID (default a fresh one): the same again is the same job
         --wait            follow the job until it ends, and print its result
  show --job ID            print the job as it stands
  cancel --job ID          cancel an open job
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_BACKEND=http://127.0.0.1:8788.`;

const FLAGS = {
  backend: { type: 'string' },
  integration: { type: 'string' },
  'client-token-file': { type: 'string' },
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

interface Client {
  readonly base: string;
  readonly token: string;
}

async function call(client: Client, path: string, init: { method: string; body?: unknown }): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${client.base}${path}`, {
    method: init.method,
    headers: { authorization: `Bearer ${client.token}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: kept as text for the message below.
  }
  return { status: response.status, body };
}

/** The backend's answer as a job view, or an error that says what it answered. */
function viewOf(answer: { status: number; body: unknown }): JobView {
  if (answer.status >= 200 && answer.status < 300) return JobView.parse(answer.body);
  const error = (answer.body as { error?: { code?: string; message?: string } } | undefined)?.error;
  throw new Error(`the backend answered ${answer.status}${error ? ` ${error.code}: ${error.message}` : ''}`);
}

function payloadFrom(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (error) {
    throw new UsageError(`--payload ${file}: ${(error as Error).message}`);
  }
}

/**
 * Runs one job command. A usage error is thrown (exit 2); any other failure (the backend unreachable or
 * refusing) is a plain line on stderr and exit 1: this is a terminal tool, not a supervised server.
 */
export async function jobCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  try {
    await runJobCommand(argv, env);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`assistant-relay job: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}

async function runJobCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [verb, ...rest] = argv;
  if (verb !== 'create' && verb !== 'show' && verb !== 'cancel') throw new UsageError(`job takes create, show or cancel, not ${JSON.stringify(verb ?? '')}`);
  const flags = readFlags(rest, FLAGS, env);
  const required = (flag: 'backend' | 'integration' | 'client-token-file' | 'purpose' | 'job') => {
    const value = flags(flag);
    if (value === undefined || value === '') throw new UsageError(`--${flag} is required`);
    return value;
  };
  const client: Client = {
    base: `${required('backend').replace(/\/$/, '')}/api/v1/assistant/integrations/${encodeURIComponent(required('integration'))}`,
    token: readTokenFile(required('client-token-file'), { create: false }),
  };
  let view: JobView;
  if (verb === 'create') {
    const purpose = required('purpose') as JobPurpose;
    const file = flags('payload');
    const payload = file === undefined ? {} : payloadFrom(file);
    const deadline_ms = parseDuration('deadline', flags('deadline') ?? '30s');
    view = viewOf(await call(client, '/jobs', { method: 'POST', body: { job_id: flags('job') ?? randomUUID(), purpose, payload, deadline_ms } }));
    if (flags('wait') === true) view = await follow(client, view);
  } else if (verb === 'show') {
    view = viewOf(await call(client, `/jobs/${encodeURIComponent(required('job'))}`, { method: 'GET' }));
  } else {
    view = viewOf(await call(client, `/jobs/${encodeURIComponent(required('job'))}/cancel`, { method: 'POST' }));
  }
  process.stdout.write(`${JSON.stringify(verb === 'create' && view.state === 'completed' ? view.result : view)}\n`);
  if (verb === 'create' && flags('wait') === true && view.state !== 'completed') process.exitCode = 1;
}

/** Asks how the job stands until it ends, saying so on stderr whenever that changes (one line, rewritten on a terminal). */
async function follow(client: Client, created: JobView): Promise<JobView> {
  const tty = process.stderr.isTTY;
  let view = created;
  let said = '';
  for (;;) {
    const line = `job ${view.job_id}: ${view.state}${view.deliveries > 0 ? ` (delivered ${view.deliveries}×)` : ''}`;
    if (line !== said) process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
    said = line;
    if (!OPEN_STATES.has(view.state)) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    view = viewOf(await call(client, `/jobs/${encodeURIComponent(view.job_id)}`, { method: 'GET' }));
  }
  if (tty) process.stderr.write('\n');
  return view;
}

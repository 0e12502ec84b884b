/**
 * `assistant-relay job create|show|cancel`: the client's side of the reasoning channel from a terminal.
 * `create --wait` creates a job (a fresh `job_id` unless `--job` names one: the same id again is the same
 * job, so a retried command never runs it twice), follows it with a progress line on stderr until it
 * ends, and prints its result (or its view) as JSON on stdout; it exits 0 when the job completed, 1 when
 * it failed, expired or was cancelled. With a client's keys file (`--keys`, from `assistant-relay pair`)
 * a job is BYO unless `--plain`: its payload is sealed before it leaves, and its result opened and checked
 * against the purpose's result schema here (the backend cannot read it).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ENVELOPE_VERSION, JobView, OPEN_JOB_STATES, PURPOSES, jsonSchemaOf, open, seal, type EnvelopeBinding, type JobPurpose, type Keyring } from '../../protocol/index.js';
import { resultProblems } from '../../protocol/response-schema.js';
import type { BackendClient } from '../client/backend-client.js';
import { CLIENT_FLAGS, CLIENT_USAGE, credentialsFromFlags, runClientCommand } from './client.js';
import { UsageError, parseDuration, readFlags, requiredFlag } from './flags.js';

export const JOB_USAGE = `usage: assistant-relay job create|show|cancel (--keys FILE | --backend URL --integration ID --client-token-file FILE) [options]
${CLIENT_USAGE}
  create --purpose P       live_analysis, session_summary or capability_probe
         --payload FILE    the payload as a JSON file (default {})
         --deadline D      e.g. 30s, 5m (default 30s)
         --job ID          its job_id, a UUID (default a fresh one): the same again is the same job
         --wait            follow the job until it ends, and print its result
         --plain           with --keys, send the job unencrypted (default: BYO, sealed with the keys)
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
  plain: { type: 'boolean' },
} as const;

/** How often `--wait` tries to follow the job again after its stream was cut, before it gives up. */
const FOLLOW_ATTEMPTS = 5;

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
  const { client, keys } = credentialsFromFlags(flags);
  if (flags('plain') === true && (verb !== 'create' || keys === undefined)) throw new UsageError('--plain is for job create with --keys');
  let view: JobView;
  if (verb === 'create') {
    const purpose = required('purpose') as JobPurpose;
    const file = flags('payload');
    const payload = file === undefined ? {} : payloadFrom(file);
    const deadline_ms = parseDuration('deadline', flags('deadline') ?? '30s');
    const job_id = flags('job') ?? randomUUID();
    const sealing = flags('plain') === true ? undefined : keys;
    const body =
      sealing === undefined
        ? { job_id, purpose, payload, deadline_ms }
        : { job_id, purpose, payload: seal(sealing.current, bindingOf(job_id, purpose, 'client_to_assistant'), payload), byo: true, deadline_ms };
    view = await client.call(JobView, '/jobs', { method: 'POST', body });
    if (flags('wait') === true) view = await follow(client, view);
  } else if (verb === 'show') {
    view = await client.call(JobView, `/jobs/${encodeURIComponent(required('job'))}`, { method: 'GET' });
  } else {
    view = await client.call(JobView, `/jobs/${encodeURIComponent(required('job'))}/cancel`, { method: 'POST' });
  }
  view = opened(view, keys);
  process.stdout.write(`${JSON.stringify(verb === 'create' && view.state === 'completed' ? view.result : view)}\n`);
  if (verb === 'create' && flags('wait') === true && view.state !== 'completed') process.exitCode = 1;
}

function bindingOf(job_id: string, purpose: string, direction: EnvelopeBinding['direction']): EnvelopeBinding {
  return { job_id, purpose, direction, envelope_version: ENVELOPE_VERSION };
}

/**
 * A BYO job's view with its result opened and checked against the purpose's result schema, which only
 * the client can do; a result that does not open or does not follow the schema is an error, never shown
 * as a result.
 */
function opened(view: JobView, keys: Keyring | undefined): JobView {
  if (!view.byo || view.result === undefined) return view;
  if (keys === undefined) throw new Error('the job is BYO: its result opens only with the keys (--keys)');
  const result = open(keys.keyOf, bindingOf(view.job_id, view.purpose, 'assistant_to_client'), view.result);
  const problems = resultProblems(jsonSchemaOf(PURPOSES[view.purpose].result), result);
  if (problems !== undefined) throw new Error(`the job's result does not follow its purpose's result schema: ${problems}`);
  return { ...view, result: result as Record<string, unknown> };
}

/**
 * Follows the job's events (SSE, PROTOCOL.md 6e.13) until it ends, saying so on stderr whenever it changes
 * (one line, rewritten on a terminal). A cut stream is followed again from its last frame id, after 0.5 s,
 * 1 s, 2 s…; a backend that stays away ends the command.
 */
async function follow(client: BackendClient, created: JobView): Promise<JobView> {
  const tty = process.stderr.isTTY;
  const path = `/jobs/${encodeURIComponent(created.job_id)}/events`;
  let view = created;
  let said = '';
  const say = () => {
    const line = `job ${view.job_id}: ${view.state}${view.deliveries > 0 ? ` (delivered ${view.deliveries}×)` : ''}`;
    if (line !== said) process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
    said = line;
  };
  say();
  let cursor: string | undefined;
  let cuts = 0;
  while (OPEN_JOB_STATES.has(view.state)) {
    let cut: unknown = new Error('the backend ended the job\'s event stream');
    try {
      for await (const event of client.events(path, cursor)) {
        view = JobView.parse(JSON.parse(event.data));
        cursor = event.id;
        cuts = 0;
        say();
        if (!OPEN_JOB_STATES.has(view.state)) break;
      }
    } catch (error) {
      cut = error;
    }
    if (!OPEN_JOB_STATES.has(view.state)) break;
    cuts += 1;
    if (cuts >= FOLLOW_ATTEMPTS) throw cut;
    await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** cuts));
  }
  if (tty) process.stderr.write('\n');
  return view;
}

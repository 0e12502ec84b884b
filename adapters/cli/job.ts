/**
 * `assistant-relay job create|show|cancel`: the client's side of the reasoning channel from a terminal.
 * `create --wait` creates a job (a fresh `job_id` unless `--job` names one: the same id again is the same
 * job, so a retried command never runs it twice), follows it with a progress line on stderr until it
 * ends, and prints its result (or its view) as JSON on stdout; it exits 0 when the job completed, 1 when
 * it failed, expired or was cancelled. With a client's keys file (`--keys`, from `assistant-relay pair`)
 * every job is BYO: its payload is sealed before it leaves, and its result opened and checked against the
 * purpose's result schema here (the backend cannot read it). Every view the backend answers is checked
 * against the job asked for and as created (a forged one is an error, never printed: PROTOCOL.md 8.9).
 */
import { readFileSync } from 'node:fs';
import { isUuid, type JobPurpose, type JobView } from '../../protocol/index.js';
import { JobsClient } from '../client/jobs.js';
import { CLIENT_FLAGS, CLIENT_USAGE, credentialsFromFlags, runClientCommand } from './client.js';
import { UsageError, parseDuration, readFlags, requiredFlag } from './flags.js';

export const JOB_USAGE = `usage: assistant-relay job create|show|cancel (--keys FILE | --backend URL --integration ID --client-token-file FILE) [options]
${CLIENT_USAGE}
  create --purpose P       live_analysis, session_summary or capability_probe
         --payload FILE    the payload as a JSON file (default {})
         --deadline D      e.g. 30s, 5m (default 30s)
         --job ID          its job_id, a UUID (default a fresh one): the same again is the same job
         --wait            follow the job until it ends, and print its result
  show --job ID            print the job as it stands (its whole job_id)
  cancel --job ID          cancel an open job (its whole job_id)
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_BACKEND=http://127.0.0.1:8788.`;

const FLAGS = {
  ...CLIENT_FLAGS,
  purpose: { type: 'string' },
  payload: { type: 'string' },
  deadline: { type: 'string' },
  job: { type: 'string' },
  wait: { type: 'boolean' },
} as const;

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
  if (verb !== 'create' && verb !== 'show' && verb !== 'cancel')
    throw new UsageError(`job takes create, show or cancel, not ${JSON.stringify(verb ?? '')}`);
  const flags = readFlags(rest, FLAGS, env);
  const required = (flag: 'purpose' | 'job') => requiredFlag(flags, flag);
  const { client, integrationId, keys } = credentialsFromFlags(flags);
  const jobs = new JobsClient(client, integrationId, keys);
  let view: JobView;
  if (verb === 'create') {
    const file = flags('payload');
    view = await jobs.create({
      purpose: required('purpose') as JobPurpose,
      payload: file === undefined ? {} : payloadFrom(file),
      deadline_ms: parseDuration('deadline', flags('deadline') ?? '30s'),
      ...(flags('job') === undefined ? {} : { job_id: flags('job')! }),
    });
    if (flags('wait') === true) view = await follow(jobs, view);
  } else {
    view = await (verb === 'show' ? jobs.show(wholeJobId(required('job'))) : jobs.cancel(wholeJobId(required('job'))));
  }
  process.stdout.write(`${JSON.stringify(verb === 'create' && view.state === 'completed' ? view.result : view)}\n`);
  if (verb === 'create' && flags('wait') === true && view.state !== 'completed') process.exitCode = 1;
}

/**
 * `show` and `cancel` name a job by its whole id: the backend finds a job by it and lists none a start could
 * be found in (a log can: `replay --job` takes the start of an id).
 */
function wholeJobId(id: string): string {
  if (!isUuid(id)) throw new UsageError(`--job ${id} is not a whole job_id (a UUID): the backend finds a job by its whole id only`);
  return id;
}

/** Follows the job until it ends, saying so on stderr whenever it changes (one line, rewritten on a terminal). */
async function follow(jobs: JobsClient, created: JobView): Promise<JobView> {
  const tty = process.stderr.isTTY;
  let said = '';
  const say = (view: JobView) => {
    const line = `job ${view.job_id}: ${view.state}${view.deliveries > 0 ? ` (delivered ${view.deliveries}×)` : ''}`;
    if (line !== said) process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
    said = line;
  };
  say(created);
  const view = await jobs.follow(created, say);
  if (tty) process.stderr.write('\n');
  return view;
}

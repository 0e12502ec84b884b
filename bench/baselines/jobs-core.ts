/**
 * The job round trip of the job baselines (issue 26), the same path as the relay's (PROTOCOL.md 6, 6d.1,
 * 6e.13) with nothing else: a client creates a job, the job goes to the integration's plugin stream, the
 * plugin says it runs it and posts its result, and the job's followers read each new view of it. Each
 * step is handed to `commit` first and acted on (answered, sent) only in its callback: a durable baseline
 * commits it to its log there, the in-memory one calls back at once. One integration; no deadlines, no
 * quotas, no schema checks, no redelivery: the baselines are the path's cost alone.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';

/** Hands a step over; `then` runs once it is committed (at once, for the in-memory baseline). */
export type Commit = (record: object, then: () => void) => void;
/** Answers a request with a status and its JSON text. */
export type Respond = (status: number, json: string) => void;

type State = 'created' | 'delivered' | 'running' | 'completed';
interface Job {
  readonly job_id: string;
  readonly purpose: string;
  readonly payload: unknown;
  readonly created_at: string;
  readonly deadline_at: string;
  state: State;
  deliveries: number;
  /** How many steps it has had: its followers' frame id. */
  version: number;
  settled_at?: string;
  result?: unknown;
  readonly followers: Set<ServerResponse>;
}

/** Settled jobs kept for a retried request, as the relay's `--max-settled-jobs` keeps its newest. */
const SETTLED_KEPT = 1_000;
const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
};
const error = (code: string, message: string) => JSON.stringify({ error: { code, message } });
export const NOT_FOUND = error('job_not_found', 'no such job');
const OK = '{"ok":true}';
const CONFLICT = error('result_conflict', 'the job has another result');

function openStream(response: ServerResponse): void {
  response.socket?.setNoDelay(true);
  response.writeHead(200, SSE_HEADERS);
  response.write(': open\n\n');
}

export class JobsCore {
  private readonly jobs = new Map<string, Job>();
  private readonly settled: string[] = [];
  private plugin: ServerResponse | undefined;
  private frames = 0;

  constructor(
    private readonly integrationId: string,
    private readonly commit: Commit,
  ) {}

  private view(job: Job): string {
    return JSON.stringify({
      job_id: job.job_id,
      integration_id: this.integrationId,
      purpose: job.purpose,
      state: job.state,
      byo: false,
      created_at: job.created_at,
      deadline_at: job.deadline_at,
      deliveries: job.deliveries,
      ...(job.settled_at === undefined ? {} : { settled_at: job.settled_at }),
      ...(job.result === undefined ? {} : { result: job.result }),
    });
  }

  /** A step committed: the job's followers are sent its new view. */
  private changed(job: Job): void {
    job.version += 1;
    if (job.followers.size === 0) return;
    const frame = `id: ${job.version}\ndata: ${this.view(job)}\n\n`;
    for (const follower of job.followers) follower.write(frame);
  }

  private deliver(job: Job): void {
    const plugin = this.plugin;
    if (plugin === undefined) return;
    const seq = (this.frames += 1);
    this.commit({ type: 'job.delivered', job_id: job.job_id, seq }, () => {
      job.state = 'delivered';
      job.deliveries += 1;
      this.changed(job);
      const envelope = {
        event_type: 'reasoning_job',
        job_id: job.job_id,
        purpose: job.purpose,
        deadline_at: job.deadline_at,
        schema_version: 1,
        envelope_version: 1,
        payload: job.payload,
        byo: false,
      };
      plugin.write(`id: ${seq}\ndata: ${JSON.stringify(envelope)}\n\n`);
    });
  }

  create(body: unknown, respond: Respond): void {
    const { job_id, purpose, payload, deadline_ms } = (body ?? {}) as Record<string, unknown>;
    if (typeof job_id !== 'string' || typeof purpose !== 'string' || typeof payload !== 'object' || payload === null) {
      respond(400, error('invalid_request', 'job_id, purpose and payload are required'));
      return;
    }
    const known = this.jobs.get(job_id);
    if (known !== undefined) return respond(200, this.view(known));
    const now = Date.now();
    const created_at = new Date(now).toISOString();
    const deadline_at = new Date(now + (typeof deadline_ms === 'number' ? deadline_ms : 30_000)).toISOString();
    this.commit({ type: 'job.created', job_id, purpose, payload, created_at, deadline_at }, () => {
      const job: Job = {
        job_id,
        purpose,
        payload,
        created_at,
        deadline_at,
        state: 'created',
        deliveries: 0,
        version: 1,
        followers: new Set(),
      };
      this.jobs.set(job_id, job);
      respond(201, this.view(job));
      this.deliver(job);
    });
  }

  /** The plugin's stream: a new one takes the place of the one before. */
  stream(response: ServerResponse): void {
    openStream(response);
    this.plugin?.end();
    this.plugin = response;
    response.on('close', () => {
      if (this.plugin === response) this.plugin = undefined;
    });
    for (const job of this.jobs.values()) if (job.state === 'created') this.deliver(job);
  }

  running(jobId: string, respond: Respond): void {
    const job = this.jobs.get(jobId);
    if (job === undefined) return respond(404, NOT_FOUND);
    if (job.state !== 'delivered') return respond(200, OK);
    this.commit({ type: 'job.running', job_id: jobId }, () => {
      job.state = 'running';
      this.changed(job);
      respond(200, OK);
    });
  }

  result(jobId: string, body: unknown, respond: Respond): void {
    const job = this.jobs.get(jobId);
    const result = (body as { result?: unknown } | null)?.result;
    if (job === undefined) return respond(404, NOT_FOUND);
    if (typeof result !== 'object' || result === null) return respond(400, error('invalid_request', 'result is required'));
    if (job.state === 'completed')
      return respond(JSON.stringify(job.result) === JSON.stringify(result) ? 200 : 409, job.result === result ? OK : CONFLICT);
    const settled_at = new Date().toISOString();
    this.commit({ type: 'job.completed', job_id: jobId, result, settled_at }, () => {
      job.state = 'completed';
      job.result = result;
      job.settled_at = settled_at;
      this.changed(job);
      respond(200, OK);
      this.settled.push(jobId);
      if (this.settled.length > SETTLED_KEPT) this.jobs.delete(this.settled.shift()!);
    });
  }

  /** A client following a job: its view now, then each new one. */
  follow(jobId: string, response: ServerResponse): boolean {
    const job = this.jobs.get(jobId);
    if (job === undefined) return false;
    openStream(response);
    response.write(`id: ${job.version}\ndata: ${this.view(job)}\n\n`);
    job.followers.add(response);
    response.on('close', () => job.followers.delete(response));
    return true;
  }

  /** Ends every stream, so that the server can close. */
  close(): void {
    this.plugin?.destroy();
    for (const job of this.jobs.values()) for (const follower of job.followers) follower.destroy();
  }
}

/** A job baseline's command line: `--port 0 --integration ID --client-token T --relay-token T [--db FILE]`. */
export function jobsServerArgs(name: string) {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      integration: { type: 'string' },
      'client-token': { type: 'string' },
      'relay-token': { type: 'string' },
      db: { type: 'string' },
    },
    strict: true,
  });
  const { integration, 'client-token': client, 'relay-token': relay } = values;
  if (integration === undefined || client === undefined || relay === undefined) {
    process.stderr.write(`${name}: --integration, --client-token and --relay-token are required\n`);
    process.exit(2);
  }
  return { port: Number(values.port), integration, client, relay, db: values.db };
}

/** Whose bearer token a request carries, checked in constant time as the relay's are (one hash each). */
export function roleOf(tokens: { client: string; relay: string }): (header: string | undefined) => 'client' | 'relay' | undefined {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const client = digest(tokens.client);
  const relay = digest(tokens.relay);
  return (header) => {
    if (header === undefined || !header.startsWith('Bearer ')) return undefined;
    const given = digest(header.slice(7));
    return timingSafeEqual(given, client) ? 'client' : timingSafeEqual(given, relay) ? 'relay' : undefined;
  };
}

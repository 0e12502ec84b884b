/**
 * An HTTP proxy on loopback in front of one of our servers that breaks one rule of the protocol on
 * purpose, by rewriting what passes: the broken variants the conformance kit must fail, naming the
 * rule (issue 27). Everything else passes as it came, so the one rule broken is the one the kit may name.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** Rewrites an event stream: its text comes as SSE blocks (each ending in a blank line), in order. */
export type StreamFault = (request: IncomingMessage) => ((block: string) => string) | undefined;

export interface BreakingProxy {
  readonly url: string;
  close(): Promise<void>;
}

export async function breakingProxy(upstream: string, fault: StreamFault): Promise<BreakingProxy> {
  const target = new URL(upstream);
  const server: Server = createServer((inbound: IncomingMessage, outbound: ServerResponse) => {
    const forwarded = request(
      { host: target.hostname, port: target.port, method: inbound.method, path: inbound.url, headers: inbound.headers },
      (answer) => {
        outbound.writeHead(answer.statusCode ?? 502, answer.headers);
        const rewrite = /^text\/event-stream/.test(answer.headers['content-type'] ?? '') ? fault(inbound) : undefined;
        if (rewrite === undefined) {
          answer.pipe(outbound);
          return;
        }
        let pending = '';
        answer.setEncoding('utf8');
        answer.on('data', (text: string) => {
          pending += text;
          const blocks = pending.split('\n\n');
          pending = blocks.pop()!;
          const out = blocks.map((block) => rewrite(`${block}\n\n`)).join('');
          if (out !== '') outbound.write(out);
        });
        answer.on('end', () => outbound.end(pending));
        answer.on('error', () => outbound.destroy());
      },
    );
    forwarded.on('error', () => outbound.destroy());
    inbound.pipe(forwarded);
    outbound.on('close', () => forwarded.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A host that forgets to open its streams with `: open`. */
export const forgetsOpen: StreamFault = () => (block) => block.replace(/^: ?open\n\n/, '');

/** A host that, resuming after a cursor, replays one reply too few (it drops the first). */
export const replaysOneTooFew: StreamFault = (request) => {
  if (request.headers['last-event-id'] === undefined) return undefined;
  let dropped = false;
  return (block) => {
    if (dropped || !/^id:/m.test(block)) return block;
    dropped = true;
    return '';
  };
};

/** A host whose reconciliation frame names a task lost that it just replayed (one no eviction took). */
export const namesUnlistedLost: StreamFault = (request) => {
  if (request.headers['last-event-id'] === undefined) return undefined;
  let replayed: string | undefined;
  return (block) => {
    const data = /^data: ?(.*)$/m.exec(block)?.[1];
    if (data === undefined) return block;
    const body = JSON.parse(data) as { task_id?: string; missed_task_ids?: string[] };
    if (body.missed_task_ids === undefined) {
      replayed ??= body.task_id;
      return block;
    }
    if (replayed === undefined) return block;
    const lying = { ...body, missed_task_ids: [...body.missed_task_ids, replayed] };
    return block.replace(data, JSON.stringify(lying));
  };
};

/** The job stream's requests (the plugin's), not a job's events (a client's). */
const isJobStream = (request: IncomingMessage) => /\/stream(\?|$)/.test(request.url ?? '');

/**
 * A backend that, on each new job stream, sends again every job frame its earlier streams sent: settled
 * jobs among them. The jobs it sends again are the proxy's memory, not the backend's.
 */
export function redeliversSettled(): StreamFault {
  const sent: string[] = [];
  return (request) => {
    if (!isJobStream(request)) return undefined;
    const earlier = [...sent];
    let replayed = false;
    return (block) => {
      if (/^data: ?\{.*"event_type":"reasoning_job"/m.test(block) && !/^event:/m.test(block)) sent.push(block);
      if (replayed) return block;
      replayed = true;
      return `${block}${earlier.join('')}`;
    };
  };
}

/**
 * A plugin that runs a finished job again: when a job it was sent before comes again, the proxy says to
 * the backend, as that plugin would, that it runs the job.
 */
export function runsFinishedJobAgain(backend: string): StreamFault {
  const seen = new Set<string>();
  return (request) => {
    if (!isJobStream(request)) return undefined;
    const integration = (request.url ?? '').replace(/\/stream(\?.*)?$/, '');
    return (block) => {
      const jobId = /"event_type":"reasoning_job"/.test(block) ? /"job_id":"([^"]+)"/.exec(block)?.[1] : undefined;
      if (jobId !== undefined && seen.has(jobId))
        // As the plugin would; a backend already gone at the end of a test is no failure of it.
        // As that plugin would; a backend already gone at the end of a test is no failure of the test.
        void fetch(`${backend}${integration}/jobs/${jobId}/running`, {
          method: 'POST',
          headers: { authorization: request.headers.authorization ?? '' },
        }).catch(() => undefined);
      if (jobId !== undefined) seen.add(jobId);
      return block;
    };
  };
}

/** A plugin that starts a job past its deadline: each job reaches it with a deadline a minute away. */
export const startsPastDeadline: StreamFault = (request) =>
  isJobStream(request)
    ? (block) => block.replace(/"deadline_at":"[^"]*"/, `"deadline_at":"${new Date(Date.now() + 60_000).toISOString()}"`)
    : undefined;

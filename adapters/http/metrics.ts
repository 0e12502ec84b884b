/**
 * `/metrics` in the Prometheus text format (prom-client), what the host and the backend share: a registry
 * of each server's own (never prom-client's global one: several hosts and relays may run in one process),
 * the requests it answered by route pattern and status with their durations, the process's own metrics,
 * and the route a scraper reads. No label takes a value a caller chooses: a route is its pattern
 * (`/v1/sessions/:session_id`), never the path asked for.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Every metric's name begins with it. */
export const METRICS_PREFIX = 'assistant_relay_';

/** What a request that matched no route is counted under. */
const UNMATCHED = 'unmatched';

/** Durations in seconds: a request answered at once, one that waited for a commit, a slow one, and a stream (its time open). */
const DURATION_BUCKETS = [0.005, 0.025, 0.1, 0.5, 2.5, 30];

let processRegistry: Registry | undefined;

/**
 * The process's metrics (CPU, memory, event-loop lag, GC), collected once per process however many servers
 * it runs: prom-client's collector arms a timer and a GC observer for good, one per call.
 */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: METRICS_PREFIX });
  }
  return processRegistry;
}

/** Counts every request the app answers (route pattern, method, status) and times it, from its start to its response's end. */
export function countRequests(app: FastifyInstance, registry: Registry): void {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: `${METRICS_PREFIX}http_requests_total`,
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames,
    registers: [registry],
  });
  const durations = new Histogram({
    name: `${METRICS_PREFIX}http_request_duration_seconds`,
    help: 'Time from a request to the end of its response (a stream: its time open), by method, route pattern and status code.',
    labelNames,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  app.addHook('onResponse', (request, reply, done) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? UNMATCHED, status: reply.statusCode };
    requests.inc(labels);
    durations.observe(labels, reply.elapsedTime / 1000);
    done();
  });
}

/** What a metric read at scrape time reads: one number, or one per value of its label; `undefined`: not known now (NaN). */
export type Reading = number | Readonly<Record<string, number>> | undefined;

export interface ScrapedMetric {
  readonly kind: 'gauge' | 'counter';
  /** Without the prefix. */
  readonly name: string;
  readonly help: string;
  /** The one label a reading by value carries. */
  readonly label?: string;
  readonly read: () => Reading | Promise<Reading>;
}

/**
 * A metric whose value is read when scraped, not kept by prom-client: a gauge from the engine's fold, or a
 * counter the adapter keeps as a plain number (an increment per event, nothing allocated).
 */
export function scraped(registry: Registry, metric: ScrapedMetric): void {
  const config = {
    name: `${METRICS_PREFIX}${metric.name}`,
    help: metric.help,
    labelNames: metric.label === undefined ? [] : [metric.label],
    registers: [registry],
  };
  const take = (reading: Reading, put: (value: number, labels?: Record<string, string>) => void) => {
    if (typeof reading === 'number') put(reading);
    else if (reading === undefined) put(NaN);
    else for (const [value, n] of Object.entries(reading ?? {})) put(n, { [metric.label!]: value });
  };
  if (metric.kind === 'gauge') {
    new Gauge({
      ...config,
      async collect() {
        const reading = await metric.read();
        this.reset();
        take(reading, (n, labels) => (labels === undefined ? this.set(n) : this.set(labels, n)));
      },
    });
    return;
  }
  new Counter({
    ...config,
    async collect() {
      const reading = await metric.read();
      this.reset();
      take(reading, (n, labels) => (labels === undefined ? this.inc(n) : this.inc(labels, n)));
    },
  });
}

/**
 * A reading of the engine's fold taken once for all the metrics of a scrape: prom-client runs every
 * metric's collector in one synchronous pass, so the reading is dropped at the next microtask.
 */
export function onceAScrape<T>(read: () => T): () => T {
  let reading: T | undefined;
  return () => {
    if (reading === undefined) {
      reading = read();
      queueMicrotask(() => (reading = undefined));
    }
    return reading;
  };
}

/** `GET /metrics` in the scope it is registered in (whose hooks say who may scrape): this server's metrics, then the process's. */
export function metricsRoute(scope: FastifyInstance, registry: Registry): void {
  scope.get('/metrics', { exposeHeadRoute: false }, async (_request, reply) => {
    const [own, process] = await Promise.all([registry.metrics(), processMetrics().metrics()]);
    return reply.type(registry.contentType).send(`${own}\n${process}`);
  });
}

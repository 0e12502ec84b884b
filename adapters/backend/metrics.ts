/**
 * The backend relay's metrics (`/metrics`, docs/operating.md "Metrics"): its jobs by state, integrations,
 * streams and followers read from the engine's fold when scraped; jobs created and settled, deliveries and
 * redeliveries counted from the batches this node committed (so that the nodes of a service add up); and,
 * on PostgreSQL, the store's append time, the decisions queued for it and how far the fold lags behind it.
 * A job pays an increment of a plain number per event; the rest is paid by the scrape.
 */
import { performance } from 'node:perf_hooks';
import { Histogram, type Registry } from 'prom-client';
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import type { PartitionedBackendLog } from '../../engine/reasoning/partitioned-log.js';
import type { BrokerPubSub } from '../brokers/broker.js';
import { METRICS_PREFIX, onceAScrape, scraped } from '../http/metrics.js';
import type { ResultChecks } from './result-checks.js';

export interface BackendMetricsParts {
  readonly backend: ReasoningEngine;
  /** On PostgreSQL: the log several nodes share, partitioned by integration. */
  readonly shared?: { readonly log: PartitionedBackendLog };
  readonly broker?: BrokerPubSub;
  readonly checks?: ResultChecks;
}

/** What this node committed, counted per event: plain numbers, read when scraped. */
interface Tally {
  created: number;
  deliveries: number;
  redeliveries: number;
  completed: number;
  failed: number;
  expired: number;
  cancelled: number;
}

/** Times each append to the shared store, from its start to its commit or failure. */
export function storeAppendTimer(registry: Registry): (append: Promise<unknown>) => void {
  const appends = new Histogram({
    name: `${METRICS_PREFIX}store_append_duration_seconds`,
    help: "Time of one append to the shared PostgreSQL log (a group commit of the decisions queued meanwhile), the head's lock included.",
    buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 2.5],
    registers: [registry],
  });
  return (append) => {
    const started = performance.now();
    const done = () => appends.observe((performance.now() - started) / 1000);
    append.then(done, done);
  };
}

export function observeBackend(registry: Registry, parts: BackendMetricsParts): void {
  const { backend, shared, broker, checks } = parts;
  const tally: Tally = { created: 0, deliveries: 0, redeliveries: 0, completed: 0, failed: 0, expired: 0, cancelled: 0 };
  backend.onCommitted((events, own) => {
    // Another node's commits are its own to count: the service's total is the sum over its nodes.
    if (own) for (const event of events) count(tally, event);
  });
  const gauges = onceAScrape(() => backend.gauges());
  scraped(registry, {
    kind: 'gauge',
    name: 'jobs',
    label: 'state',
    help: "Jobs this node's fold holds, by state (settled ones until retention forgets them; on a shared log, those of the integrations it holds).",
    read: () => gauges().jobs,
  });
  scraped(registry, { kind: 'counter', name: 'jobs_created_total', help: 'Jobs this node created.', read: () => tally.created });
  scraped(registry, {
    kind: 'counter',
    name: 'jobs_settled_total',
    label: 'state',
    help: 'Jobs this node settled, by final state.',
    read: () => ({ completed: tally.completed, failed: tally.failed, expired: tally.expired, cancelled: tally.cancelled }),
  });
  scraped(registry, {
    kind: 'counter',
    name: 'job_deliveries_total',
    help: "Job frames this node sent on an integration's stream, each under a lease.",
    read: () => tally.deliveries,
  });
  scraped(registry, {
    kind: 'counter',
    name: 'job_redeliveries_total',
    help: 'Job frames this node sent again under a new lease (after a reconnect, a takeover or a lapsed lease).',
    read: () => tally.redeliveries,
  });
  scraped(registry, {
    kind: 'gauge',
    name: 'streams_open',
    label: 'kind',
    help: "Streams (SSE) open on this node, by kind: an integration's job stream (its plugin's), a client following a job.",
    read: () => ({ jobs: gauges().jobStreams, followers: gauges().followers }),
  });
  scraped(registry, {
    kind: 'gauge',
    name: 'integrations_held',
    help: "Integrations this node's fold holds (on a shared log, those it serves now: owned, streamed or followed here, or asked for lately).",
    read: () => gauges().integrationsHeld,
  });
  scraped(registry, {
    kind: 'gauge',
    name: 'integrations_online',
    help: 'Integrations whose plugin is online (its heartbeats on time).',
    read: () => gauges().integrationsOnline,
  });
  scraped(registry, {
    kind: 'gauge',
    name: 'integrations_owned',
    help: 'Integrations this node owns: their timers and their plugin stream are here (on SQLite, every one).',
    read: () => gauges().integrationsOwned,
  });
  if (shared !== undefined) {
    scraped(registry, {
      kind: 'gauge',
      name: 'store_decisions_queued',
      help: 'Decisions waiting for the shared PostgreSQL log, or in the append under way.',
      read: () => shared.log.undecidedCount,
    });
    scraped(registry, {
      kind: 'gauge',
      name: 'fold_lag_events',
      help: 'Events committed to the partitions this node holds that it has not folded yet (NaN: the store could not be read).',
      read: () =>
        shared.log.lag().then(
          (lag) => lag,
          () => undefined,
        ),
    });
  }
  if (broker !== undefined) {
    const help = 'Whether the broker that carries commits between nodes is connected (1) or not (0).';
    scraped(registry, { kind: 'gauge', name: 'broker_connected', help, read: () => (broker.health.connected ? 1 : 0) });
  }
  if (checks !== undefined) {
    scraped(registry, {
      kind: 'gauge',
      name: 'result_checks',
      label: 'state',
      help: 'Costly result checks (in a worker thread), running or queued for a thread.',
      read: () => ({ running: checks.running, queued: checks.queued }),
    });
  }
}

function count(tally: Tally, event: BackendEvent): void {
  switch (event.type) {
    case 'job.created':
      tally.created += 1;
      return;
    case 'job.delivered':
      tally.deliveries += 1;
      if (event.delivery > 1) tally.redeliveries += 1;
      return;
    case 'job.completed':
      tally.completed += 1;
      return;
    case 'job.failed':
      tally.failed += 1;
      return;
    case 'job.expired':
      tally.expired += 1;
      return;
    case 'job.cancelled':
      tally.cancelled += 1;
      return;
    default:
      // Nothing else is counted.
      return;
  }
}

/**
 * A fastify instance with what every HTTP surface of ours has (the host's and the backend's): the time
 * limits, our error body on every failure (Node's own answers included), UTF-8 JSON bodies only, and
 * `GET /healthz`; each request counted and timed for `/metrics` (metrics.ts); an HTTP/1.1 request without Host refused with our body; a close that does not wait for connections that never sent a request; and CORS for the browser origins an operator lists (none by default: then no
 * cross-origin browser request is let through). Each surface registers its routes on it.
 */
import cors from '@fastify/cors';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { answerClientError } from './client-errors.js';
import { answerError, errorsPlugin, sendError } from './errors.js';
import { healthPlugin, type HealthReport } from './health.js';
import { jsonBodyPlugin } from './json-body.js';
import { countRequests } from './metrics.js';
import type { HttpLimits } from './limits.js';
import { RequestLogController } from './request-log.js';
import { closeSpareConnectionsOnClose } from './spare-connections.js';

export interface HttpAppOptions {
  readonly limits: HttpLimits;
  readonly bodyLimit: number;
  readonly maxParamLength: number;
  /** What `/healthz` answers as the process's epoch. */
  readonly epoch: string;
  /** What `/healthz` answers instead, for a process that reports on itself. */
  readonly health?: () => Promise<HealthReport>;
  readonly logger?: FastifyBaseLogger;
  /** Origins (`https://app.example`) whose browser pages may call this surface; preflights answered for them. */
  readonly corsOrigins?: readonly string[];
  /**
   * The reverse proxies (addresses, CIDR ranges, or `loopback`, `linklocal`, `uniquelocal`) whose
   * `X-Forwarded-For` names a request's client address (`request.ip`); none by default: the peer's address.
   */
  readonly trustProxy?: readonly string[];
  /** The server's metrics registry: every request it answers is counted and timed there. */
  readonly metrics?: Registry;
}

/** What a browser client sends besides simple headers, and may read besides simple ones. */
const CORS = {
  methods: ['GET', 'POST'],
  allowedHeaders: ['authorization', 'content-type', 'last-event-id', 'accept'],
  exposedHeaders: ['retry-after', 'www-authenticate'],
  maxAge: 600,
};

export async function newHttpApp(options: HttpAppOptions): Promise<FastifyInstance> {
  const { limits } = options;
  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    bodyLimit: options.bodyLimit,
    ...(options.trustProxy === undefined || options.trustProxy.length === 0 ? {} : { trustProxy: [...options.trustProxy] }),
    logController: new RequestLogController(),
    routerOptions: { maxParamLength: options.maxParamLength },
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.connectionIdleTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks both limits on this period (30 s by default), which would stretch a 10 s limit to 40 s.
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
      // Node would answer an HTTP/1.1 request without Host itself, with no body: refused below, with ours.
      requireHostHeader: false,
    },
    // The errors plugin answers requests that arrive while the host closes, with our body.
    return503OnClosing: false,
    frameworkErrors: (error, request, reply) => void answerError(error, request, reply),
    clientErrorHandler: answerClientError,
  });
  closeSpareConnectionsOnClose(app);
  if (options.metrics !== undefined) countRequests(app, options.metrics);
  app.addHook('onRequest', async (request, reply) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      return sendError(reply, 'invalid_request', 'an HTTP/1.1 request needs a Host header', { connection: 'close' });
    }
  });
  if ((options.corsOrigins ?? []).length > 0) await app.register(cors, { ...CORS, origin: [...options.corsOrigins!] });
  await app.register(errorsPlugin);
  await app.register(jsonBodyPlugin);
  await app.register(healthPlugin, { epoch: options.epoch, ...(options.health === undefined ? {} : { report: options.health }) });
  return app;
}

/** Where an embedded host or relay listens. */
export interface ListenOptions {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0: any free port. */
  readonly port?: number;
}

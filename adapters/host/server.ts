/** The HTTP surface of both forms as a fastify instance: one plugin per concern. */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { LIMITS } from '../../protocol/index.js';
import type { ChatEngine } from '../../engine/chat/engine.js';
import type { CallbackPolicy } from '../callback/policy.js';
import { authPlugin } from '../http/auth.js';
import { eventsPlugin } from './events.js';
import { incomingPlugin } from './incoming.js';
import { newHttpApp } from '../http/app.js';
import { metricsRoute } from '../http/metrics.js';
import type { HttpLimits } from '../http/limits.js';
import { sessionsPlugin } from './sessions.js';
import { STREAMS_RETRY_AFTER_SECONDS, StreamSlots } from '../http/stream-slots.js';
import { validationPlugin } from '../http/validation.js';

/** `Retry-After` of a 429 from the per-session reader cap: a reader overlapping its own reconnect is gone in a moment. */
const READERS_RETRY_AFTER_SECONDS = 1;

export interface HttpOptions {
  readonly token: string;
  /** Judges the callback URLs incoming events advertise. */
  readonly callbacks: CallbackPolicy;
  readonly logger?: FastifyBaseLogger;
  readonly limits: HttpLimits;
  /** Browser origins allowed to call the host (CORS); none by default. */
  readonly corsOrigins?: readonly string[];
  /** This server's metrics: its requests are counted there, and `/metrics` (with the token) answers them. */
  readonly metrics?: Registry;
}

export async function buildServer(engine: ChatEngine, options: HttpOptions): Promise<FastifyInstance> {
  const { limits } = options;
  const app = await newHttpApp({
    limits,
    bodyLimit: LIMITS.incomingMaxBytes,
    // Long enough that an over-long session_id reaches its schema and the coded 400.
    maxParamLength: 4 * LIMITS.sessionIdMaxLength,
    epoch: engine.epoch,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
  });
  await app.register(async (scope) => {
    // Zod validation for our routes only: routes an embedder adds to the instance keep fastify's JSON Schema.
    await scope.register(validationPlugin);
    await scope.register(authPlugin, { token: options.token });
    await scope.register(incomingPlugin, { engine, callbacks: options.callbacks });
    await scope.register(eventsPlugin, {
      engine,
      slots: new StreamSlots(limits.maxStreams),
      readersRetryAfterSeconds: READERS_RETRY_AFTER_SECONDS,
      streamsRetryAfterSeconds: STREAMS_RETRY_AFTER_SECONDS,
    });
    await scope.register(sessionsPlugin, { engine });
    if (options.metrics !== undefined) metricsRoute(scope, options.metrics);
  });
  return app;
}

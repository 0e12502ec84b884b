/** The Form A HTTP surface as a fastify instance: one plugin or route module per concern. */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import { LIMITS, errorBody } from '../../protocol/index.js';
import type { Engine } from '../../engine/engine.js';
import type { CallbackPolicy } from '../callback/policy.js';
import { requireBearer } from './auth.js';
import { errorsPlugin } from './errors.js';
import { eventsRoute } from './events.js';
import { incomingRoute } from './incoming.js';
import { RequestLogController } from './request-log.js';
import { sessionsRoute } from './sessions.js';

export interface HttpOptions {
  readonly token: string;
  /** Judges the callback URLs incoming events advertise. */
  readonly callbacks: CallbackPolicy;
  readonly logger?: FastifyBaseLogger;
  /** `Retry-After` on a 429 from the reader cap. */
  readonly retryAfterSeconds?: number;
}

export async function buildServer(engine: Engine, options: HttpOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    bodyLimit: LIMITS.incomingMaxBytes,
    logController: new RequestLogController(),
    // Long enough that an over-long session_id reaches our own check and its coded 400.
    routerOptions: { maxParamLength: 4 * LIMITS.sessionIdMaxLength },
    return503OnClosing: true,
    frameworkErrors: (_error, _request, reply) => {
      // fastify's own message quotes the URL back; ours does not.
      void (reply as FastifyReply).code(400).send(errorBody('invalid_request', 'the request URL is malformed'));
    },
  });
  await app.register(errorsPlugin);
  // fastify parses text/plain by default; every body here is JSON, so any other type is a 415.
  app.removeContentTypeParser('text/plain');
  app.get('/healthz', async () => ({ ok: true, epoch: engine.epoch }));
  await app.register(async (scope) => {
    requireBearer(scope, options.token);
    incomingRoute(scope, engine, options.callbacks);
    eventsRoute(scope, engine, options.retryAfterSeconds ?? 1);
    sessionsRoute(scope, engine);
  });
  return app;
}


/** The backend relay's HTTP surface (4.1): the plugin's routes, the client's, pairing's and the operator's (`/metrics` among them), each with its own credential. */
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import { isUuid } from '../../protocol/index.js';
import { newHttpApp } from '../http/app.js';
import type { HealthReport } from '../http/health.js';
import type { HttpLimits } from '../http/limits.js';
import { metricsRoute } from '../http/metrics.js';
import { validationPlugin } from '../http/validation.js';
import { adminRoutes, operatorGuard } from './admin-routes.js';
import { BACKEND_BODY_LIMIT } from './body-limits.js';
import { clientRoutes } from './client-routes.js';
import { pairingRoutes } from './pairing-routes.js';
import { pluginRoutes } from './plugin-routes.js';

export interface BackendHttpOptions {
  readonly limits: HttpLimits;
  readonly logger?: FastifyBaseLogger;
  /** The SHA-256 digest of the operator token; without one there are no admin routes. */
  readonly operatorTokenDigest?: string;
  /** Browser origins allowed to call the backend (CORS); none by default. */
  readonly corsOrigins?: readonly string[];
  /** Reverse proxies whose `X-Forwarded-For` names a request's source (the pairing limits are each source's); none by default. */
  readonly trustProxy?: readonly string[];
  /** What `/healthz` answers: the node, its store and its broker. */
  readonly health?: () => Promise<HealthReport>;
  /** This server's metrics: its requests are counted there, and `/metrics` (the operator's) answers them. */
  readonly metrics?: Registry;
}

export async function buildBackendServer(backend: ReasoningEngine, options: BackendHttpOptions): Promise<FastifyInstance> {
  const app = await newHttpApp({
    limits: options.limits,
    bodyLimit: BACKEND_BODY_LIMIT,
    // Ids are UUIDs: anything much longer is refused before it reaches a schema.
    maxParamLength: 200,
    epoch: backend.epoch,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
    ...(options.trustProxy === undefined ? {} : { trustProxy: options.trustProxy }),
    ...(options.health === undefined ? {} : { health: options.health }),
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
  });
  const { metrics, operatorTokenDigest } = options;
  // Outside the scope below: a scrape does not wait for the fold to catch up with the store (nor fail when it cannot).
  if (metrics !== undefined && operatorTokenDigest !== undefined) {
    await app.register(async (scope) => {
      scope.addHook('onRequest', operatorGuard(operatorTokenDigest));
      metricsRoute(scope, metrics);
    });
  }
  await app.register(async (scope) => {
    // On a shared store, a request reads what any node committed before it came (nothing to do for one node),
    // of the integration it names, or of the service's partition (pairings, the operator's tickets).
    scope.addHook('onRequest', (request) => backend.caughtUp(integrationOf(request)));
    await scope.register(validationPlugin);
    await scope.register(pluginRoutes, { backend });
    await scope.register(clientRoutes, { backend });
    await scope.register(pairingRoutes, { backend });
    if (operatorTokenDigest !== undefined) await scope.register(adminRoutes, { backend, operatorTokenDigest });
  });
  return app;
}

/** The integration a request names in its path (`…/integrations/{id}…`), if it names one that can be: pairings' ids are not integrations'. */
function integrationOf(request: FastifyRequest): string | undefined {
  const id = (request.params as { id?: unknown } | undefined)?.id;
  return request.url.includes('/integrations/') && typeof id === 'string' && isUuid(id) ? id : undefined;
}

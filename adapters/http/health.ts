/**
 * `GET /healthz`: liveness and what a probe needs to know, without a token. A process that reports on
 * itself (a backend node: draining, its store, its broker) answers 503 with the same body when it is not
 * fit to take requests, so that a load balancer sends them elsewhere.
 */
import type { FastifyPluginAsync } from 'fastify';

export interface HealthReport {
  readonly ok: boolean;
  readonly epoch: string;
}

export interface HealthOptions {
  readonly epoch: string;
  readonly report?: () => Promise<HealthReport>;
}

export const healthPlugin: FastifyPluginAsync<HealthOptions> = async (app, { epoch, report }) => {
  app.get('/healthz', async (_request, reply) => {
    if (report === undefined) return { ok: true, epoch };
    const health = await report();
    return reply.code(health.ok ? 200 : 503).send(health);
  });
};

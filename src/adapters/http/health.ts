/** `GET /healthz`: liveness for operators and probes, without a token. */
import type { FastifyPluginAsync } from 'fastify';

export const healthPlugin: FastifyPluginAsync<{ readonly epoch: string }> = async (app, { epoch }) => {
  app.get('/healthz', async () => ({ ok: true, epoch }));
};

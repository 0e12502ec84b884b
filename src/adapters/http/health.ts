/** `GET /healthz`: liveness for operators and probes, without a token. */
import type { FastifyPluginAsync } from 'fastify';
import type { Engine } from '../../engine/engine.js';

export const healthPlugin: FastifyPluginAsync<{ readonly engine: Engine }> = async (app, { engine }) => {
  app.get('/healthz', async () => ({ ok: true, epoch: engine.epoch }));
};

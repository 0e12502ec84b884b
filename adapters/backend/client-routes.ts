/**
 * The client's side of the backend, which the seed does not show (PROTOCOL.md 6.7): read the integration
 * (its plugin's presence and capability profile), create a job (idempotent by `job_id`), read it, follow
 * it as it changes (SSE), cancel it. Every route is the integration's, with its client token, and a
 * `job_id` names that integration's job only: another's of the same id is as unknown as no job at all.
 */
import type { FastifyPluginAsync } from 'fastify';
import { IntegrationPath, JobCreateBody, JobPath, JobStreamHeaders, RekeyPath, RekeyRequestBody } from '../../protocol/index.js';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import { sendError } from '../http/errors.js';
import { streamTransport } from '../http/sse-transport.js';
import { STREAMS_RETRY_AFTER_SECONDS, StreamSlots } from '../http/stream-slots.js';
import type { ZodTypeProvider } from '../http/validation.js';
import { integrationAuthPlugin } from './auth.js';
import { jobBodyLimit } from './body-limits.js';
import { sendOverQuota } from './over-quota.js';
import { integrationView, jobView, rekeyView } from './view.js';

const BASE = '/api/v1/assistant/integrations/:id';

export const clientRoutes: FastifyPluginAsync<{ readonly backend: ReasoningEngine }> = async (scope, { backend }) => {
  await scope.register(integrationAuthPlugin, { backend, role: 'client' });
  const app = scope.withTypeProvider<ZodTypeProvider>();
  // Followers on this node: every integration's together, and each one's (PROTOCOL.md 6e.19).
  const followers = new StreamSlots(backend.quotas.maxNodeFollowers, backend.quotas.maxFollowers);

  app.get(BASE, { schema: { params: IntegrationPath } }, async (request, reply) => {
    const read = await backend.committedIntegration(request.params.id);
    // The auth plugin admitted the token, so the integration exists; it may have been revoked since.
    return read === undefined ? sendError(reply, 'unauthorized') : integrationView(read);
  });

  app.post(
    `${BASE}/jobs`,
    { bodyLimit: jobBodyLimit(backend.maxJobBytes), schema: { params: IntegrationPath, body: JobCreateBody } },
    async (request, reply) => {
      const answer = await backend.createJob(request.params.id, request.body);
      if (answer.outcome === 'over_quota') return sendOverQuota(reply, answer.quota);
      if (answer.outcome === 'invalid' && 'code' in answer) return sendError(reply, answer.code, answer.message);
      if (answer.outcome === 'conflict') return sendError(reply, 'job_conflict');
      if (answer.job === undefined) return sendError(reply, 'unauthorized');
      // A retried create answers the job as it stands now.
      return reply.code(answer.outcome === 'created' ? 201 : 200).send(jobView(answer.job));
    },
  );

  app.get(`${BASE}/jobs/:job_id`, { schema: { params: JobPath } }, async (request, reply) => {
    const job = await backend.committedJob(request.params.id, request.params.job_id);
    return job === undefined ? sendError(reply, 'job_not_found') : jobView(job);
  });

  // No HEAD twin: a HEAD answer can carry no stream.
  app.get(
    `${BASE}/jobs/:job_id/events`,
    { exposeHeadRoute: false, schema: { params: JobPath, headers: JobStreamHeaders } },
    async (request, reply) => {
      const job = await backend.committedJob(request.params.id, request.params.job_id);
      if (job === undefined) return sendError(reply, 'job_not_found');
      const slot = followers.take(reply.raw, request.params.id);
      if (slot !== 'taken')
        return sendError(reply, slot === 'full' ? 'too_many_node_followers' : 'too_many_followers', undefined, {
          'retry-after': String(STREAMS_RETRY_AFTER_SECONDS),
        });
      backend.follow(
        job,
        request.headers['last-event-id'],
        () => streamTransport(reply),
        (changed) => JSON.stringify(jobView(changed)),
      );
      return reply;
    },
  );

  app.post(`${BASE}/jobs/:job_id/cancel`, { schema: { params: JobPath } }, async (request, reply) => {
    const answer = await backend.cancel(request.params.id, request.params.job_id);
    if (answer.job === undefined) return sendError(reply, 'job_not_found');
    if (answer.outcome === 'settled') return sendError(reply, 'job_settled');
    return jobView(answer.job);
  });

  // Key rotation (PROTOCOL.md 7.12): the client asks, the plugin answers on its own route, the client reads the answer.
  app.post(`${BASE}/rekeys`, { schema: { params: IntegrationPath, body: RekeyRequestBody } }, async (request, reply) => {
    const asked = await backend.rekeys.request(request.params.id, request.body);
    if (asked.outcome === 'over_quota') return sendOverQuota(reply, asked.quota);
    if (asked.outcome === 'unknown') return sendError(reply, 'unauthorized');
    if (asked.outcome === 'conflict') return sendError(reply, 'rekey_conflict');
    return reply.code(asked.outcome === 'requested' ? 201 : 200).send(rekeyView(asked.rekey!));
  });

  app.get(`${BASE}/rekeys/:rekey_id`, { schema: { params: RekeyPath } }, async (request, reply) => {
    const read = await backend.committedIntegration(request.params.id);
    const rekey = read?.integration.context.rekey;
    return rekey?.rekey_id === request.params.rekey_id ? rekeyView(rekey) : sendError(reply, 'rekey_not_found');
  });
};

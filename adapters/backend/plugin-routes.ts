/**
 * The plugin's side of the backend (4.1, 6.1): the integration's job stream, heartbeats, and the two
 * things a plugin says of a job, that it runs it and how it ended. Every route is the integration's, with
 * its RELAY_TOKEN.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { Heartbeat, IntegrationPath, JobPath, JobResultBody, JobStreamHeaders, RekeyAnswerBody, RekeyPath } from '../../protocol/index.js';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import type { JobAnswer } from '../../engine/reasoning/job-answers.js';
import { sendError } from '../http/errors.js';
import { streamTransport } from '../http/sse-transport.js';
import type { ZodTypeProvider } from '../http/validation.js';
import { integrationAuthPlugin } from './auth.js';
import { jobBodyLimit } from './body-limits.js';
import { sendOverQuota } from './over-quota.js';

const BASE = '/api/v1/assistant/integrations/:id';

/** How the outcome of what a plugin says of a job reads on the wire. */
function answerJob(reply: FastifyReply, answer: JobAnswer) {
  switch (answer.outcome) {
    case 'unknown':
      return sendError(reply, 'job_not_found');
    case 'settled':
    // Too late: the deadline passed, and the job expired now.
    case 'expired':
      return sendError(reply, 'job_settled');
    case 'conflict':
      return sendError(reply, 'result_conflict');
    case 'invalid':
      return sendError(reply, answer.code, answer.message);
    case 'busy':
      return sendError(reply, answer.code, answer.message, { 'retry-after': String(answer.retry_after_s) });
    default:
      return reply.code(200).send({ ok: true });
  }
}

export const pluginRoutes: FastifyPluginAsync<{ readonly backend: ReasoningEngine }> = async (scope, { backend }) => {
  await scope.register(integrationAuthPlugin, { backend, role: 'relay' });
  const app = scope.withTypeProvider<ZodTypeProvider>();

  // No HEAD twin: a HEAD answer can carry no stream.
  app.get(
    `${BASE}/stream`,
    { exposeHeadRoute: false, schema: { params: IntegrationPath, headers: JobStreamHeaders } },
    async (request, reply) => {
      // A refused plugin takes no jobs (6c.5): its heartbeats go on, and the first one admitted opens the way.
      const refusal = backend.refusalOf(request.params.id);
      if (refusal !== undefined) return sendError(reply, 'plugin_refused', refusal.message);
      const opened = await backend.openStream(request.params.id, request.headers['last-event-id'], () => streamTransport(reply));
      // Authenticated a moment ago: only a revocation in between leaves no stream.
      if (opened === undefined) return sendError(reply, 'unauthorized');
      return 'over' in opened ? sendOverQuota(reply, opened) : reply;
    },
  );

  app.post(`${BASE}/heartbeat`, { schema: { params: IntegrationPath, body: Heartbeat } }, async (request, reply) => {
    const answer = await backend.integrations.heartbeat(request.params.id, request.body);
    // Authenticated a moment ago: only a revocation in between leaves no answer.
    if (answer === undefined) return sendError(reply, 'unauthorized');
    return 'over' in answer ? sendOverQuota(reply, answer) : answer;
  });

  app.post(`${BASE}/jobs/:job_id/running`, { schema: { params: JobPath } }, async (request, reply) => {
    const answer = await backend.running(request.params.id, request.params.job_id);
    return answerJob(reply, answer);
  });

  app.post(
    `${BASE}/jobs/:job_id/result`,
    { bodyLimit: jobBodyLimit(backend.maxJobBytes), schema: { params: JobPath, body: JobResultBody } },
    async (request, reply) => {
      // A result of a job taken before a refusal is still taken: the refusal stops new jobs, not finished ones.
      return answerJob(reply, await backend.result(request.params.id, request.params.job_id, request.body));
    },
  );

  app.post(`${BASE}/rekeys/:rekey_id`, { schema: { params: RekeyPath, body: RekeyAnswerBody } }, async (request, reply) => {
    const outcome = await backend.rekeys.answer(request.params.id, request.params.rekey_id, request.body);
    if (outcome === 'unknown') return sendError(reply, 'rekey_not_found');
    if (outcome === 'conflict') return sendError(reply, 'rekey_conflict');
    return { ok: true };
  });
};

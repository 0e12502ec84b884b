/**
 * Pairing through the backend (5, PROTOCOL.md 7): the client starts a pairing, the assistant's side joins
 * with the handle of the code a person carried to it, and each side's messages follow in the one order
 * the protocol allows, every one after the first with that side's pairing token. Starting and joining
 * need no token: a pairing grants nothing that exists, only an integration of its own; they count
 * against the limits of the request's source (its address, or with `trustProxy` the client's address a
 * trusted proxy forwarded), and with the `ticket` policy a start uses up one of the operator's tickets.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  AbortBody,
  ClientKeyBody,
  CommitBody,
  ConfirmBody,
  PairingJoinBody,
  PairingPath,
  PairingStartBody,
  RevealBody,
  bearerToken,
} from '../../protocol/index.js';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import type { PairingRefusal } from '../../engine/reasoning/pairing-limits.js';
import type { PairingAnswer, PairingRole } from '../../engine/reasoning/pairings.js';
import { sourceOf } from '../../protocol/ip-address.js';
import { sendError } from '../http/errors.js';
import type { ZodTypeProvider } from '../http/validation.js';
import { pairingView } from './view.js';

const BASE = '/api/v1/pairings';
const iso = (ms: number) => new Date(ms).toISOString();

/** A refused start, join or ticket: its code, with `Retry-After` for a 429. */
export function sendRefusal(reply: FastifyReply, { refused, message, retryAfterS }: PairingRefusal) {
  return sendError(reply, refused, message, retryAfterS === undefined ? {} : { 'retry-after': String(retryAfterS) });
}

/** How a step's outcome reads on the wire; `render` answers a step taken. */
function answerStep(
  reply: FastifyReply,
  answer: PairingAnswer,
  render: (answer: PairingAnswer) => unknown = ({ pairing }) => pairingView(pairing!),
) {
  switch (answer.outcome) {
    case 'unknown':
      return sendError(reply, 'pairing_not_found');
    case 'out_of_order':
      return sendError(reply, 'pairing_out_of_order');
    case 'conflict':
      return sendError(reply, 'pairing_conflict');
    case 'ended':
    case 'expired':
      return sendError(reply, 'pairing_ended');
    default:
      return render(answer);
  }
}

export const pairingRoutes: FastifyPluginAsync<{ readonly backend: ReasoningEngine }> = async (scope, { backend }) => {
  const app = scope.withTypeProvider<ZodTypeProvider>();
  const { pairings } = backend;

  /** The side the request's pairing token is of, if it is of one allowed here; else the answer is sent. */
  const sideOf = (
    request: { readonly params: { readonly id: string }; readonly headers: FastifyRequest['headers'] },
    reply: FastifyReply,
    allowed: readonly PairingRole[],
  ): PairingRole | undefined => {
    const token = bearerToken(request.headers.authorization);
    const role = token === undefined ? undefined : pairings.roleOf(request.params.id, token);
    if (role !== undefined && allowed.includes(role)) return role;
    void sendError(
      reply,
      'unauthorized',
      role === undefined ? undefined : `this message is the ${role === 'client' ? 'assistant' : 'client'}'s to send`,
      {
        'www-authenticate': 'Bearer realm="assistant-relay"',
      },
    );
    return undefined;
  };

  app.post(BASE, { schema: { body: PairingStartBody } }, async (request, reply) => {
    const started = await pairings.start(request.body, sourceOf(request.ip));
    if ('refused' in started) return sendRefusal(reply, started);
    const { context } = started.pairing;
    return reply
      .code(201)
      .send({ pairing_id: context.pairing_id, handle: context.handle, pairing_token: started.token, expires_at: iso(context.expires_at) });
  });

  app.post(`${BASE}/join`, { schema: { body: PairingJoinBody } }, async (request, reply) => {
    const joined = await pairings.join(request.body.handle, sourceOf(request.ip));
    if ('refused' in joined) return sendRefusal(reply, joined);
    return answerStep(reply, joined, ({ pairing, token }) => {
      const c = pairing!.context;
      return {
        pairing_id: c.pairing_id,
        provider_kind: c.provider_kind,
        schema_version: c.schema_version,
        envelope_version: c.envelope_version,
        pairing_token: token,
        expires_at: iso(c.expires_at),
      };
    });
  });

  const params = { params: PairingPath };

  app.get(`${BASE}/:id`, { schema: params }, async (request, reply) => {
    if (sideOf(request, reply, ['client', 'assistant']) === undefined) return reply;
    return pairingView((await pairings.committedPairing(request.params.id))!);
  });

  app.post(`${BASE}/:id/commit`, { schema: { ...params, body: CommitBody } }, async (request, reply) => {
    if (sideOf(request, reply, ['assistant']) === undefined) return reply;
    return answerStep(reply, await pairings.commit(request.params.id, request.body.commitment));
  });

  app.post(`${BASE}/:id/client-key`, { schema: { ...params, body: ClientKeyBody } }, async (request, reply) => {
    if (sideOf(request, reply, ['client']) === undefined) return reply;
    return answerStep(reply, await pairings.sendClientKey(request.params.id, request.body.client_key));
  });

  app.post(`${BASE}/:id/reveal`, { schema: { ...params, body: RevealBody } }, async (request, reply) => {
    if (sideOf(request, reply, ['assistant']) === undefined) return reply;
    return answerStep(reply, await pairings.reveal(request.params.id, request.body.assistant_key, request.body.nonce));
  });

  app.post(`${BASE}/:id/client-confirm`, { schema: { ...params, body: ConfirmBody } }, async (request, reply) => {
    if (sideOf(request, reply, ['client']) === undefined) return reply;
    return answerStep(reply, await pairings.confirmClient(request.params.id, request.body.confirmation), ({ token }) => ({
      client_token: token,
    }));
  });

  app.post(`${BASE}/:id/assistant-confirm`, { schema: { ...params, body: ConfirmBody } }, async (request, reply) => {
    if (sideOf(request, reply, ['assistant']) === undefined) return reply;
    return answerStep(reply, await pairings.complete(request.params.id, request.body.confirmation), ({ pairing, token }) => ({
      integration_id: pairing!.context.integration_id,
      relay_token: token,
    }));
  });

  app.post(`${BASE}/:id/abort`, { schema: { ...params, body: AbortBody } }, async (request, reply) => {
    const side = sideOf(request, reply, ['client', 'assistant']);
    if (side === undefined) return reply;
    return answerStep(reply, await pairings.abort(request.params.id, side, request.body.reason));
  });
};

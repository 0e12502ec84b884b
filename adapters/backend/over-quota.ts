/** How a refusal for load reads on the wire: 429 with its own code and an honest `Retry-After` (PROTOCOL.md 6e.18 to 6e.21). */
import type { FastifyReply } from 'fastify';
import type { OverQuota } from '../../machines/reasoning/quotas.js';
import { sendError } from '../http/errors.js';

export function sendOverQuota(reply: FastifyReply, { over, message, retry_after_s }: OverQuota) {
  return sendError(reply, over, message, { 'retry-after': String(retry_after_s) });
}

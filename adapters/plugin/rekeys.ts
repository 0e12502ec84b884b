/**
 * Key rotations as the plugin takes them (PROTOCOL.md 7.12): a `rekey` frame on the job stream carries the
 * client's request; the plugin's owner (`PluginOptions.rotate`) checks it under the keys it holds, makes
 * and keeps the new ones, and gives the answer, which is posted until the backend takes it. The same
 * request again (after a reconnect, say) is answered again with what the owner kept. A request that does
 * not check out is logged and left unanswered: the client then keeps its keys.
 */
import type { BaseLogger } from 'pino';
import { z } from 'zod';
import { PairingError, RekeyRequestBody, type RekeyAnswer, type RekeyRequest } from '../../protocol/index.js';
import type { Clock } from '../../engine/core/clock.js';
import type { BackendLink } from './backend-link.js';
import { untilAnswered } from './retry.js';

/** How long an answer is tried before it is given up (the client gives up too, and asks again). */
const ANSWER_FOR_MS = 10 * 60_000;

export interface RekeysOptions {
  readonly backend: BackendLink;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: BaseLogger;
  readonly rotate: (request: RekeyRequest) => Promise<RekeyAnswer>;
}

export class Rekeys {
  private readonly stopping = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: RekeysOptions) {}

  onFrame(data: string): void {
    let request: RekeyRequest;
    try {
      request = RekeyRequestBody.parse(JSON.parse(data));
    } catch (error) {
      this.options.logger.warn(
        { err: error instanceof z.ZodError ? z.prettifyError(error) : String(error) },
        'a rekey frame that is not a rotation request: ignored',
      );
      return;
    }
    const work = this.answer(request).finally(() => this.inFlight.delete(work));
    this.inFlight.add(work);
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.all(this.inFlight);
  }

  private async answer(request: RekeyRequest): Promise<void> {
    const { backend, clock, random, logger, rotate } = this.options;
    let answer: RekeyAnswer;
    try {
      answer = await rotate(request);
    } catch (error) {
      if (!(error instanceof PairingError)) throw error;
      logger.warn({ rekey_id: request.rekey_id, code: error.code, reason: error.message }, 'key rotation refused');
      return;
    }
    const posted = await untilAnswered(() => backend.rekey(request.rekey_id, answer), clock.now() + ANSWER_FOR_MS, {
      clock,
      random,
      stop: this.stopping.signal,
    });
    logger.info({ rekey_id: request.rekey_id, outcome: posted.kind === 'answered' ? posted.status : posted.kind }, 'key rotation answered');
  }
}

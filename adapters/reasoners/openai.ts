/**
 * The `openai` reasoner: an OpenAI-compatible chat-completions client (`POST {base_url}/chat/completions`),
 * so Ollama, vLLM, llama.cpp's server and hosted APIs all serve. It asks for structured output with the job's
 * `response_schema`, checks the answer against it, and asks once more, with what was wrong, if it does not
 * follow it. A capability probe is answered from its own configuration, not by the model: the model would
 * only guess.
 */
import { Pool } from 'undici';
import { sleep, systemClock, type Clock } from '../../engine/core/clock.js';
import { ReasonerError, type Reasoner, type ReasoningRequest } from './reasoner.js';
import { peek } from '../http/peek.js';
import { parseRetryAfter } from '../../protocol/retry-after.js';
import { builtinReasoner } from './builtin.js';
import { chatBody, errorDetail, plainAnswer, streamedAnswer, type ChatAnswer, type ChatMessage } from './chat-completions.js';
import { jobEnd, type JobEnd } from './deadline.js';
import type { ProfileLimits } from './profile.js';
import { INSTRUCTIONS } from './prompt.js';
import { clip, reasonerResultProblems } from './result.js';

export interface OpenAiReasonerOptions {
  /** e.g. `http://127.0.0.1:11434/v1` (Ollama); `/chat/completions` is added to its path. */
  readonly baseUrl: string;
  readonly model: string;
  /** Sent only as `Authorization: Bearer …`; none for a local server that needs none. */
  readonly apiKey?: string | undefined;
  /** Ask for a streamed answer (`stream: true`). Either kind of answer is read, whatever was asked. */
  readonly stream?: boolean;
  readonly providerKind: string;
  readonly limits?: ProfileLimits;
  /** Bound on one answer's bytes (default 4 MiB). */
  readonly maxAnswerBytes?: number;
  readonly clock?: Clock;
}

/** Rate-limited answers (429, 503 with `Retry-After`) waited out per request, at most, within the deadline. */
const MAX_WAITS = 3;

export function openAiReasoner(options: OpenAiReasonerOptions): Reasoner {
  const { model, apiKey, stream = false, maxAnswerBytes = 4 * 1024 * 1024, clock = systemClock } = options;
  const base = new URL(options.baseUrl);
  // A pool is bound to one origin: whatever an answer says, no request goes anywhere else (and redirects are not followed).
  const pool = new Pool(base.origin);
  const path = `${base.pathname.replace(/\/+$/, '')}/chat/completions`;
  const headers = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    'user-agent': 'assistant-relay',
    ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
  };
  // A probe is answered from the configuration, as the builtin answers it, naming the model.
  const prober = builtinReasoner({
    providerKind: options.providerKind,
    models: [{ id: model }],
    ...(options.limits ? { limits: options.limits } : {}),
  });

  /** One completion, waiting out rate limits that end before the deadline. */
  async function complete(request: ReasoningRequest, messages: readonly ChatMessage[], end: JobEnd): Promise<ChatAnswer> {
    const body = chatBody({ model, messages, name: request.purpose, schema: request.response_schema, stream });
    for (let waits = 0; ; waits++) {
      let response;
      try {
        response = await pool.request({ method: 'POST', path, headers, body, signal: end.signal });
      } catch (error) {
        if (end.signal.aborted) throw error;
        throw new ReasonerError(
          'reasoner_unavailable',
          `could not reach the chat server at ${base.origin}: ${(error as { code?: string }).code ?? (error as Error).message}`,
          { cause: error },
        );
      }
      const { statusCode: status } = response;
      if (status >= 200 && status < 300) {
        const streamed = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
        return streamed ? streamedAnswer(response.body, maxAnswerBytes) : plainAnswer(response.body, maxAnswerBytes);
      }
      const detail = errorDetail(await peek(response.body, 64 * 1024));
      if (status === 429 || status === 503) {
        const wait = parseRetryAfter(response.headers['retry-after'], clock.now());
        if (wait !== undefined && waits < MAX_WAITS && clock.now() + wait < request.deadline_at) {
          if (!(await sleep(clock, wait, end.signal))) throw end.signal.reason;
          continue;
        }
        const why =
          wait === undefined
            ? 'without Retry-After'
            : waits < MAX_WAITS
              ? `Retry-After ${Math.ceil(wait / 1000)} s, past the job's deadline`
              : `again after ${MAX_WAITS} waits`;
        throw new ReasonerError('reasoner_unavailable', `the chat server answered ${status} ${why}: ${detail}`);
      }
      throw new ReasonerError(status >= 500 ? 'reasoner_unavailable' : 'reasoner_error', `the chat server answered ${status}: ${detail}`);
    }
  }

  /** The answer as a result, or what is wrong with it (in words for the model). */
  function judge(request: ReasoningRequest, answer: ChatAnswer): { result: unknown } | { problems: string } {
    if (answer.refusal !== '') throw new ReasonerError('reasoner_refused', `the model declined: ${clip(answer.refusal, 1_000)}`);
    let result: unknown;
    try {
      result = JSON.parse(unfenced(answer.content));
    } catch (error) {
      return { problems: `the answer is not JSON (${(error as Error).message})` };
    }
    const problems = reasonerResultProblems(request.response_schema, result);
    return problems === undefined ? { result } : { problems };
  }

  async function converse(request: ReasoningRequest, end: JobEnd): Promise<Record<string, unknown>> {
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content: `${INSTRUCTIONS[request.purpose]}\n\nAnswer with one JSON object, and nothing else, that follows this JSON Schema:\n${JSON.stringify(request.response_schema)}`,
      },
      { role: 'user', content: JSON.stringify(request.payload) },
    ];
    const first = await complete(request, messages, end);
    const verdict = judge(request, first);
    if ('result' in verdict) return verdict.result as Record<string, unknown>;
    messages.push(
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: `That answer does not follow the schema: ${clip(verdict.problems, 2_000)}. Answer again with only the corrected JSON object.`,
      },
    );
    const second = judge(request, await complete(request, messages, end));
    if ('result' in second) return second.result as Record<string, unknown>;
    throw new ReasonerError(
      'invalid_result',
      `the answer did not follow the job's response_schema, twice: ${clip(second.problems, 1_500)}`,
    );
  }

  return {
    name: 'openai',
    model,
    async reason(request) {
      if (request.purpose === 'capability_probe') return prober.reason(request);
      const end = jobEnd(request, clock);
      try {
        return await converse(request, end);
      } catch (error) {
        if (end.signal.aborted) throw end.failure();
        throw error;
      } finally {
        end.dispose();
      }
    },
  };
}

/** The content without a Markdown code fence around it: models that ignore `response_format` often add one. */
function unfenced(content: string): string {
  const fenced = /^```[a-z]*\s*\n([\s\S]*?)\n?```$/i.exec(content.trim());
  return fenced ? fenced[1]! : content;
}

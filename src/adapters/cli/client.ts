/**
 * What the client commands (`job`, `integrations`) share: the flags that name an integration and its
 * client token, and one call to the backend's client routes, whose answer is parsed with its zod schema or
 * turned into an error that says what the backend answered. Failures that are not usage errors are a plain
 * line on stderr and exit 1: these are terminal tools, not supervised servers.
 */
import type { z } from 'zod';
import { SseParser, type SseEvent } from '../plugin/sse-parser.js';
import { UsageError, requiredFlag } from './flags.js';
import { readTokenFile } from './service.js';

export const CLIENT_FLAGS = {
  backend: { type: 'string' },
  integration: { type: 'string' },
  'client-token-file': { type: 'string' },
} as const;

export const CLIENT_USAGE = `  --backend URL            the backend relay's base URL
  --integration ID         the integration
  --client-token-file FILE its client token (a private file)`;

export class BackendClient {
  private constructor(
    /** `…/api/v1/assistant/integrations/{id}`. */
    private readonly base: string,
    private readonly token: string,
  ) {}

  /** From the client flags; each is required. */
  static fromFlags(flag: (name: keyof typeof CLIENT_FLAGS) => string | undefined): BackendClient {
    const required = (name: keyof typeof CLIENT_FLAGS) => requiredFlag(flag, name);
    const backend = required('backend');
    if (!URL.canParse(backend) || !/^https?:$/.test(new URL(backend).protocol)) throw new UsageError(`--backend must be an http or https URL, not ${JSON.stringify(backend)}`);
    const base = `${backend.replace(/\/+$/, '')}/api/v1/assistant/integrations/${encodeURIComponent(required('integration'))}`;
    return new BackendClient(base, readTokenFile(required('client-token-file'), { create: false }));
  }

  /** `path` below the integration's base; a 2xx answer parsed with `schema`, anything else an error. */
  async call<T>(schema: z.ZodType<T>, path: string, init: { method: 'GET' | 'POST'; body?: unknown }): Promise<T> {
    const response = await fetch(`${this.base}${path}`, {
      method: init.method,
      headers: { authorization: `Bearer ${this.token}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    if (!response.ok) throw await answerError(response);
    return schema.parse(JSON.parse(await response.text()));
  }

  /** An SSE stream below the integration's base, its events as they arrive, resumed after `cursor` if given; ends when the backend ends it. */
  async *events(path: string, cursor: string | undefined): AsyncGenerator<SseEvent> {
    const response = await fetch(`${this.base}${path}`, {
      headers: { authorization: `Bearer ${this.token}`, accept: 'text/event-stream', ...(cursor === undefined ? {} : { 'last-event-id': cursor }) },
    });
    if (!response.ok || response.body === null) throw await answerError(response);
    const parser = new SseParser();
    for await (const chunk of response.body.pipeThrough(new TextDecoderStream())) yield* parser.feed(chunk);
  }
}

/** A backend's answer that was not a success, as an error that says what it was. */
async function answerError(response: Response): Promise<Error> {
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(await response.text()) as { error?: typeof error } | undefined)?.error;
  } catch {
    // Not our error body: the status says enough.
  }
  return new Error(`the backend answered ${response.status}${error ? ` ${error.code}: ${error.message}` : ''}`);
}

/** Runs a client command: a usage error is thrown on (exit 2), any other failure is a line on stderr and exit 1. */
export async function runClientCommand(name: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`assistant-relay ${name}: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}

/**
 * The OpenAI chat-completions wire, as much of it as the `openai` reasoner uses: the request body, and the
 * answer read back, plain (`application/json`) or streamed (`text/event-stream`: `data:` chunks, then
 * `data: [DONE]`). Everything read is bounded and checked with zod: the server is outside our control.
 */
import { z } from 'zod';
import { ReasonerError } from './reasoner.js';
import { peek } from '../http/peek.js';
import { clip } from './result.js';

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

/** What the model said: its text, or its refusal (structured outputs' way of declining). */
export interface ChatAnswer {
  readonly content: string;
  readonly refusal: string;
}

export interface ChatRequest {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  /** `response_format.json_schema.name`: letters, digits, `_` and `-`, at most 64. */
  readonly name: string;
  readonly schema: Record<string, unknown>;
  readonly stream: boolean;
}

export function chatBody({ model, messages, name, schema, stream }: ChatRequest): string {
  // `$schema` names the dialect for validators; some servers' grammar compilers refuse keys they do not know.
  const { $schema: _dialect, ...constraints } = schema;
  return JSON.stringify({
    model,
    messages,
    // Not strict: strict mode (OpenAI's) refuses a schema with optional properties or open objects, and
    // the purposes' schemas have both; the answer is checked and retried here whatever the server did.
    response_format: { type: 'json_schema', json_schema: { name, schema: constraints, strict: false } },
    stream,
  });
}

const Said = z.looseObject({ content: z.string().nullish(), refusal: z.string().nullish() });
const Completion = z.looseObject({ choices: z.array(z.looseObject({ message: Said })).min(1) });
const Chunk = z.looseObject({ choices: z.array(z.looseObject({ delta: Said.optional() })).optional() });
const ErrorBody = z.looseObject({ error: z.looseObject({ message: z.string() }) });

/** A chat server's `{error: {message}}`, or the start of whatever else it sent. */
export function errorDetail(text: string | undefined): string {
  if (text === undefined) return 'an answer too large to read';
  const parsed = ErrorBody.safeParse(parseJson(text));
  return clip(parsed.success ? parsed.data.error.message : text.trim() || 'an empty answer', 500);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function malformed(what: string): ReasonerError {
  return new ReasonerError('reasoner_error', `the chat server's answer is not a chat completion: ${what}`);
}

/** The first choice of a plain answer. */
export async function plainAnswer(body: AsyncIterable<Buffer>, maxBytes: number): Promise<ChatAnswer> {
  const text = await peek(body, maxBytes);
  if (text === undefined) throw malformed(`it is larger than ${maxBytes} bytes`);
  const completion = Completion.safeParse(parseJson(text));
  if (!completion.success) throw malformed(errorDetail(text));
  const said = completion.data.choices[0]!.message;
  return { content: said.content ?? '', refusal: said.refusal ?? '' };
}

/** The first choice's deltas of a streamed answer, joined; ends at `[DONE]` or at the end of the body. */
export async function streamedAnswer(body: AsyncIterable<Buffer>, maxBytes: number): Promise<ChatAnswer> {
  const decoder = new TextDecoder();
  let size = 0;
  let pending = '';
  let data: string[] = [];
  let content = '';
  let refusal = '';
  // One event's data lines, joined (SSE): a chunk, `[DONE]`, or an error a server reports mid-stream.
  const dispatch = (): boolean => {
    const text = data.join('\n');
    data = [];
    if (text === '') return false;
    if (text === '[DONE]') return true;
    const json = parseJson(text);
    const failed = ErrorBody.safeParse(json);
    if (failed.success)
      throw new ReasonerError('reasoner_error', `the chat server failed mid-answer: ${clip(failed.data.error.message, 500)}`);
    const chunk = Chunk.safeParse(json);
    if (!chunk.success) throw malformed(`a streamed chunk is not one: ${clip(text, 200)}`);
    const delta = chunk.data.choices?.[0]?.delta;
    content += delta?.content ?? '';
    refusal += delta?.refusal ?? '';
    return false;
  };
  const take = (line: string): boolean => {
    if (line === '') return dispatch();
    // A `data:` field; SSE drops one space after the colon. Other fields and comments mean nothing here.
    if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    return false;
  };
  for await (const bytes of body) {
    size += bytes.length;
    if (size > maxBytes) throw malformed(`it is larger than ${maxBytes} bytes`);
    const text = pending + decoder.decode(bytes, { stream: true });
    // A CR at the end may be the first half of a CRLF: it waits for the next bytes.
    const lines = (text.endsWith('\r') ? text.slice(0, -1) : text).split(/\r\n|\r|\n/);
    pending = lines.pop()! + (text.endsWith('\r') ? '\r' : '');
    for (const line of lines) if (take(line)) return { content, refusal };
  }
  take(pending.replace(/\r$/, ''));
  dispatch();
  return { content, refusal };
}

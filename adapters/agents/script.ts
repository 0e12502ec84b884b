/**
 * The `script` agent: a deterministic test double for client developers. A turn whose text is a JSON
 * object `{"script": [steps]}` runs the steps in order; any other text is echoed. An invalid script gets
 * an `errored` reply with `error_code` `invalid_script` saying what is wrong.
 */
import { z } from 'zod';
import type { ReplyErrorCode } from '../../protocol/index.js';
import type { Agent, ReplySink } from '../../engine/chat/agent.js';
import { echoAgent } from './echo.js';

const Step = z.union([
  z.strictObject({ typing: z.string() }),
  z.strictObject({ tool_call: z.string() }),
  z.strictObject({ message: z.string() }),
  z.strictObject({
    message_bytes: z
      .number()
      .int()
      .min(0)
      .max(16 * 1024 * 1024),
  }),
  z.strictObject({ completed: z.literal(true) }),
  z.strictObject({ silent: z.literal(true) }),
  z.strictObject({ errored: z.strictObject({ code: z.string().min(1), message: z.string() }) }),
  z.strictObject({
    sleep: z
      .number()
      .int()
      .min(0)
      .max(24 * 60 * 60 * 1000),
  }),
  z.strictObject({ end_session: z.literal(true) }),
]);
export type ScriptStep = z.infer<typeof Step>;

const Script = z.strictObject({ script: z.array(Step).max(10_000) });

/** The script in a turn's text, an error saying why it is not one, or undefined for plain text. */
export function parseScript(text: string): { steps: ScriptStep[] } | { error: string } | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json) || !('script' in json)) return undefined;
  const parsed = Script.safeParse(json);
  if (!parsed.success) return { error: z.prettifyError(parsed.error) };
  return { steps: parsed.data.script };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', abort, { once: true });
  });
}

async function runStep(step: ScriptStep, reply: ReplySink): Promise<void> {
  if ('typing' in step) return reply.typing(step.typing);
  if ('tool_call' in step) return reply.toolCall(step.tool_call);
  if ('message' in step) return reply.message(step.message);
  if ('message_bytes' in step) return reply.message('x'.repeat(step.message_bytes));
  if ('completed' in step) return reply.completed();
  if ('silent' in step) return reply.silent();
  if ('errored' in step) return reply.errored(step.errored.code, step.errored.message);
  if ('sleep' in step) return sleep(step.sleep, reply.signal);
  return reply.endSession();
}

export const scriptAgent: Agent = {
  name: 'script',
  async respond(turn, reply) {
    const script = parseScript(turn.text);
    if (script === undefined) return echoAgent.respond(turn, reply);
    if ('error' in script) return reply.errored('invalid_script' satisfies ReplyErrorCode, script.error);
    for (const step of script.steps) {
      if (reply.signal.aborted) return;
      await runStep(step, reply);
    }
  },
};

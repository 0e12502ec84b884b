/**
 * A job's `response_schema` as the check the plugin runs on its reasoner's result: the one rule every
 * judge uses (protocol/response-schema.ts), so the plugin, the reasoners and the backend never disagree.
 */
import { checkResponseSchema, resultProblems } from '../../protocol/response-schema.js';

export type CompiledResultCheck = (result: unknown) => { ok: true } | { ok: false; message: string };

export class ResultCheckCompiler {
  /** The check for `schema`; throws (with Ajv's reason) when it is not a valid JSON Schema. */
  compile(schema: Record<string, unknown>): CompiledResultCheck {
    checkResponseSchema(schema);
    return (result) => {
      const message = resultProblems(schema, result);
      return message === undefined ? { ok: true } : { ok: false, message };
    };
  }
}

/**
 * Validation at the edge: every route declares zod schemas for the parts of a request it reads (body,
 * query string, params, headers), and fastify runs them before the handler, which gets their typed
 * output. A failure is a `SchemaError`, answered by the errors plugin like every other failure.
 */
import type { FastifySchemaCompiler, FastifyTypeProvider } from 'fastify';
import fp from 'fastify-plugin';
import type { z } from 'zod';

/** Types a route's request parts as the output of its schemas. */
export interface ZodTypeProvider extends FastifyTypeProvider {
  readonly validator: this['schema'] extends z.ZodType ? z.output<this['schema']> : unknown;
  readonly serializer: this['schema'] extends z.ZodType ? z.input<this['schema']> : unknown;
}

/** A request part that failed its schema. */
export class SchemaError extends Error {
  override readonly name = 'SchemaError';
  constructor(
    readonly part: string | undefined,
    readonly schema: z.ZodType,
    readonly zodError: z.ZodError,
  ) {
    super(`the request ${part ?? ''} does not match its schema`);
  }
}

const compile: FastifySchemaCompiler<z.ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const result = schema.safeParse(data);
    return result.success ? { value: result.data } : { error: new SchemaError(httpPart, schema, result.error) };
  };

export const validationPlugin = fp(
  async (app) => {
    app.setValidatorCompiler(compile);
  },
  { name: 'assistant-relay-validation' },
);

/**
 * Each purpose's result schema as JSON Schema (draft 2020-12): what a job's `response_schema` is when it
 * names none, on the backend and in the client alike.
 */
import { PURPOSES, jsonSchemaOf, type JobPurpose } from './reasoning.js';

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const each of Object.values(value)) deepFreeze(each);
  }
  return value;
}

const purposeResultSchemas = new Map<JobPurpose, Readonly<Record<string, unknown>>>();

/**
 * The JSON Schema of a purpose's result: a job's `response_schema` when it names none. Made once a purpose
 * and frozen, since every job of the purpose shares it: zod's conversion was a thirteenth of the backend's
 * CPU a job when made for each.
 */
export function purposeResultSchema(purpose: JobPurpose): Readonly<Record<string, unknown>> {
  let schema = purposeResultSchemas.get(purpose);
  if (schema === undefined) purposeResultSchemas.set(purpose, (schema = deepFreeze(jsonSchemaOf(PURPOSES[purpose].result))));
  return schema;
}

/**
 * What checking a result against a `response_schema` may cost, estimated before it runs (PROTOCOL.md
 * 6.12): within the bounds of 6.10 each member of the schema (its `$ref`s written out) examines each byte
 * of the result about once at most, so the work is at most about members × bytes (measured: 3 to 12 ns
 * each for `enum`, `maxLength`, `format`). An upper bound, often far above what a check costs. The
 * purposes' own schemas are the backend's, not a client's: their `maxItems` and `maxLength` end a check
 * early whatever the result (a purpose's largest result checks in about 2 ms), so they count no work.
 * Browser-safe.
 */
import { PURPOSES, jsonSchemaOf } from './reasoning.js';
import { writtenOutMembers } from './schema-bounds.js';

const PURPOSE_SCHEMAS = new Set(Object.values(PURPOSES).map(({ result }) => JSON.stringify(jsonSchemaOf(result))));

/** By schema object: a job's schema is one object for its whole life in the fold. */
const membersOf = new WeakMap<object, number>();

/** The estimated work of checking a result of `bytes` against `schema`: members × bytes; 0 for a purpose's own schema, and for one past the bounds (refused before it runs). */
export function checkWork(schema: Record<string, unknown>, bytes: number): number {
  let members = membersOf.get(schema);
  if (members === undefined) {
    members = PURPOSE_SCHEMAS.has(JSON.stringify(schema)) ? 0 : (writtenOutMembers(schema) ?? 0);
    membersOf.set(schema, members);
  }
  return members * bytes;
}

/**
 * The bounds a client's `response_schema` keeps before Ajv sees it (PROTOCOL.md 6.7): its size, its
 * depth, its members and its patterns, depth and members counted as if every `$ref` were written out
 * where it is used, so that neither compiling it nor checking a result against it can cost more than
 * they allow. A reference is a local JSON Pointer (`#/$defs/x`) and never leads back to where it is used:
 * such a schema would cost without end (`allOf: [{$ref: "#"}]` overflows the stack), and a chain of
 * references used twice at each step costs twice as much per step. Browser-safe.
 */
import { jsonBytes, withinDepth } from './reasoning.js';

export const RESPONSE_SCHEMA_LIMITS = {
  /** Its compact JSON, in UTF-8. */
  maxBytes: 64 * 1024,
  /** Levels of objects and arrays, each `$ref` counted as what it names. */
  maxDepth: 32,
  /** Object members and array items, each `$ref` counted as what it names, every time it is used. */
  maxMembers: 1_000,
  /** Distinct `pattern`s and `patternProperties` names (a `propertyNames` pattern among them). */
  maxPatterns: 16,
  /** Characters of one pattern. */
  maxPatternLength: 512,
  /** RE2 instructions one pattern compiles to: `x{250}` is 250 of them. */
  maxPatternInstructions: 256,
  /** Characters × instructions every pattern together may examine while one result is checked (RE2's time is linear in both). */
  patternWork: 8 * 1024 * 1024,
} as const;

/** Keywords whose values are data, not schemas: a `$ref` in them refers to nothing. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/** Why `schema` is over a bound, or `undefined` when it keeps them all. */
export function boundsProblem(schema: Record<string, unknown>): string | undefined {
  const { maxBytes, maxDepth } = RESPONSE_SCHEMA_LIMITS;
  // Written out or not, a schema is at least as deep as its document: looked at first, without recursion.
  if (!withinDepth(schema, maxDepth)) return `the response_schema nests deeper than ${maxDepth} levels`;
  const bytes = jsonBytes(schema);
  if (bytes > maxBytes) return `the response_schema is ${bytes} bytes of JSON, more than ${maxBytes}`;
  try {
    new Expansion(schema).visit(schema, 1, true);
  } catch (error) {
    if (error instanceof OverBound) return error.message;
    throw error;
  }
  return undefined;
}

/** The object members and array items of `schema`, each `$ref` written out where it is used (what a check may apply to a result), or `undefined` past the bounds. */
export function writtenOutMembers(schema: Record<string, unknown>): number | undefined {
  if (!withinDepth(schema, RESPONSE_SCHEMA_LIMITS.maxDepth)) return undefined;
  const expansion = new Expansion(schema);
  try {
    expansion.visit(schema, 1, true);
  } catch (error) {
    if (error instanceof OverBound) return undefined;
    throw error;
  }
  return expansion.members;
}

class OverBound extends Error {}

/** A walk of the schema as if each `$ref` were written out, stopped at the first bound it passes. */
class Expansion {
  members = 0;
  private readonly patterns = new Set<string>();
  /** The references being written out on the way to where the walk is. */
  private readonly following = new Set<unknown>();

  constructor(private readonly root: Record<string, unknown>) {}

  visit(value: unknown, depth: number, isSchema: boolean): void {
    if (value === null || typeof value !== 'object') return;
    const { maxDepth, maxMembers } = RESPONSE_SCHEMA_LIMITS;
    if (depth > maxDepth) throw new OverBound(`the response_schema nests deeper than ${maxDepth} levels, its references written out`);
    const entries: Array<[string, unknown]> = Array.isArray(value) ? value.map((item) => ['', item]) : Object.entries(value);
    this.members += entries.length;
    if (this.members > maxMembers)
      throw new OverBound(`the response_schema has more than ${maxMembers} members, its references written out`);
    for (const [key, child] of entries) this.visit(child, depth + 1, isSchema && !DATA_KEYWORDS.has(key));
    if (isSchema && !Array.isArray(value)) this.keywords(value as Record<string, unknown>, depth);
  }

  private keywords(schema: Record<string, unknown>, depth: number): void {
    if (typeof schema.$dynamicRef === 'string' || typeof schema.$recursiveRef === 'string')
      throw new OverBound('the response_schema uses $dynamicRef or $recursiveRef: only $ref to a JSON Pointer of its own (#/…) is taken');
    // A nested $id would move the base that the references inside it resolve against.
    if (typeof schema.$id === 'string' && schema !== this.root)
      throw new OverBound('the response_schema has an $id below its root: one schema resource only');
    if (typeof schema.pattern === 'string') this.pattern(schema.pattern);
    const named = schema.patternProperties;
    if (named !== null && typeof named === 'object' && !Array.isArray(named))
      for (const pattern of Object.keys(named)) this.pattern(pattern);
    if (typeof schema.$ref === 'string') this.follow(schema.$ref, depth);
  }

  private pattern(pattern: string): void {
    const { maxPatterns } = RESPONSE_SCHEMA_LIMITS;
    this.patterns.add(pattern);
    if (this.patterns.size > maxPatterns) throw new OverBound(`the response_schema has more than ${maxPatterns} distinct patterns`);
  }

  /** The schema `ref` names, written out in place of the reference (at its depth). */
  private follow(ref: string, depth: number): void {
    const target = this.resolve(ref);
    // A reference Ajv cannot resolve either: it refuses the schema as not one.
    if (target === undefined) return;
    if (this.following.has(target))
      throw new OverBound(
        `the response_schema's $ref ${JSON.stringify(ref.slice(0, 100))} leads back to where it is used: recursive schemas are not taken`,
      );
    this.following.add(target);
    this.visit(target, depth, true);
    this.following.delete(target);
  }

  private resolve(ref: string): unknown {
    if (ref === '#') return this.root;
    if (!ref.startsWith('#/'))
      throw new OverBound(`the response_schema's $ref ${JSON.stringify(ref.slice(0, 100))} is not a JSON Pointer of its own (#/…)`);
    let at: unknown = this.root;
    for (const token of ref.slice(2).split('/')) {
      let name: string;
      try {
        name = decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~');
      } catch {
        return undefined;
      }
      if (at === null || typeof at !== 'object' || !Object.hasOwn(at, name)) return undefined;
      at = (at as Record<string, unknown>)[name];
    }
    return at;
  }
}

/**
 * The regular expressions of a client's `response_schema` (`pattern`, `patternProperties` and the
 * patterns under `propertyNames`) run by RE2 (re2js), in time linear in the input whatever the
 * pattern: Ajv's `code.regExp` engine. A pattern RE2 cannot run (lookaround, backreferences) or over
 * the bounds is refused when the schema compiles. RE2's time is linear in the pattern's size too, so the
 * characters × instructions that one result's check may examine are bounded (`patternWork`), and the
 * automata a check built are dropped after it: a cached schema holds its patterns, not their memory of
 * past inputs. Browser-safe.
 */
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types/index.js';
import { RE2JS } from 're2js';
import { RESPONSE_SCHEMA_LIMITS } from './schema-bounds.js';

/** A pattern that RE2 cannot run, or over the bounds: the schema is refused as one this relay does not check. */
export class UnsupportedPattern extends Error {
  override readonly name = 'UnsupportedPattern';
}

/** A check that would examine more than `patternWork`: the result is refused, whatever it holds. */
export class PatternWorkExceeded extends Error {
  override readonly name = 'PatternWorkExceeded';
}

/** The check under way: the work it has left, and the patterns it ran. */
let check: { work: number; readonly ran: Set<LinearRegExp> } | undefined;

class LinearRegExp implements RegExpLike {
  constructor(
    private readonly source: string,
    private readonly instructions: number,
    private compiled: RE2JS | undefined,
  ) {}

  test(input: string): boolean {
    if (check !== undefined) {
      check.work -= (input.length + 1) * this.instructions;
      if (check.work < 0)
        throw new PatternWorkExceeded(
          `checking the result against the schema's patterns would examine more than ${RESPONSE_SCHEMA_LIMITS.patternWork} characters × instructions`,
        );
      check.ran.add(this);
    }
    this.compiled ??= RE2JS.compile(this.source);
    return this.compiled.test(input);
  }

  /** Its automaton, grown by the inputs it examined, goes; the next test compiles it afresh. */
  forget(): void {
    this.compiled = undefined;
  }

  /** Ajv keeps one object per pattern, keyed by this. */
  toString(): string {
    return this.source;
  }
}

/** Ajv's engine: `pattern` as ECMA-262 (the `u` flag Ajv passes is how RE2 reads every pattern), run by RE2. */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string): RegExpLike => {
    const { maxPatternLength, maxPatternInstructions } = RESPONSE_SCHEMA_LIMITS;
    if (pattern.length > maxPatternLength)
      throw new UnsupportedPattern(`a pattern is ${pattern.length} characters, more than ${maxPatternLength}`);
    // Not ECMA-262 at all: the schema is no schema, as Ajv's own engine would have found. Parsed, never run.
    new RegExp(pattern, 'u');
    // RE2 would read a named backreference as the letters `k<name>`.
    if (escapes(pattern, 'k')) throw new UnsupportedPattern(`the pattern ${quoted(pattern)} has a backreference, which RE2 does not run`);
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
    } catch (error) {
      throw new UnsupportedPattern(`RE2 does not run the pattern ${quoted(pattern)}: ${(error as Error).message}`, { cause: error });
    }
    const instructions = compiled.programSize();
    if (instructions > maxPatternInstructions)
      throw new UnsupportedPattern(
        `the pattern ${quoted(pattern)} compiles to ${instructions} RE2 instructions, more than ${maxPatternInstructions}`,
      );
    return new LinearRegExp(pattern, instructions, compiled);
  },
  // What Ajv's standalone code would call; no code of ours is generated standalone.
  { code: 'linearRegExp' },
);

/** `validate` run as one check: within `patternWork`, its patterns' automata dropped after. Throws `PatternWorkExceeded`. */
export function withinPatternWork<T>(validate: () => T): T {
  check = { work: RESPONSE_SCHEMA_LIMITS.patternWork, ran: new Set() };
  const { ran } = check;
  try {
    return validate();
  } finally {
    check = undefined;
    for (const pattern of ran) pattern.forget();
  }
}

/** Whether `pattern` has the escape `\{letter}` (a backslash that is not itself escaped). */
function escapes(pattern: string, letter: string): boolean {
  for (let i = 0; i < pattern.length - 1; i += 1) {
    if (pattern[i] !== '\\') continue;
    if (pattern[i + 1] === letter) return true;
    i += 1;
  }
  return false;
}

function quoted(pattern: string): string {
  return JSON.stringify(pattern.length > 100 ? `${pattern.slice(0, 99)}…` : pattern);
}

/**
 * The client library judges a `response_schema` and a result as the backend and the plugin do
 * (PROTOCOL.md 6.10), from its browser-safe entry point: patterns run on RE2, so a pattern that backtracks
 * without end costs nothing, and a schema RE2 cannot check, or over the bounds, is refused with a code.
 */
import { describe, expect, it } from 'vitest';
import { RESPONSE_SCHEMA_LIMITS, ResponseSchemaError, checkResponseSchema, resultProblems } from '../../client.js';

const refusal = (schema: Record<string, unknown>) => {
  try {
    checkResponseSchema(schema);
  } catch (error) {
    return error instanceof ResponseSchemaError ? { code: error.code, message: error.message } : error;
  }
  return undefined;
};

const withPattern = (pattern: string) => ({ type: 'object', properties: { a: { type: 'string', pattern } } });

describe("the client's checks of a response_schema", () => {
  it('run a pattern that backtracks without end in linear time: 40 `a` and a `!` are judged at once', () => {
    // A backtracking engine tries 2^40 ways to split the `a`s before it gives up.
    expect(resultProblems(withPattern('^(a+)+$'), { a: `${'a'.repeat(40)}!` })).toBe('result/a must match pattern "^(a+)+$"');
    expect(resultProblems(withPattern('^(a+)+$'), { a: 'a'.repeat(40) })).toBeUndefined();
  });

  it('read a pattern as ECMA-262 writes it, where RE2 runs the same', () => {
    expect(resultProblems(withPattern('^[\\u0041-\\u005A]{2}-\\d{4}$'), { a: 'AB-2026' })).toBeUndefined();
    expect(resultProblems({ patternProperties: { '^x_': { type: 'number' } } }, { x_a: 'one' })).toBe('result/x_a must be number');
    expect(resultProblems({ propertyNames: { pattern: '^[a-z]+$' } }, { Name: 1 })).toMatch(/^result must match pattern "\^\[a-z\]\+\$"/);
  });

  it.each([
    ['a lookahead', withPattern('^(?!admin)')],
    ['a lookbehind', { patternProperties: { '(?<=x)y': {} } }],
    ['a backreference', withPattern('(a)\\1')],
    ['a named backreference', withPattern('(?<q>a)\\k<q>')],
    ['a pattern RE2 compiles too large', withPattern('\\p{L}{300}')],
    ['a pattern too long', withPattern('a'.repeat(RESPONSE_SCHEMA_LIMITS.maxPatternLength + 1))],
    [
      'too many patterns',
      {
        properties: Object.fromEntries(
          Array.from({ length: RESPONSE_SCHEMA_LIMITS.maxPatterns + 1 }, (_, i) => [`p${i}`, { pattern: `^${i}$` }]),
        ),
      },
    ],
    ['a recursive $ref', { $defs: { node: { allOf: [{ $ref: '#/$defs/node' }] } }, $ref: '#/$defs/node' }],
    ['a $ref to an anchor', { $defs: { a: { $anchor: 'x' } }, $ref: '#x' }],
    ['too deep', Array.from({ length: 20 }).reduce<Record<string, unknown>>((inner) => ({ properties: { a: inner } }), { type: 'string' })],
    ['too large', { type: 'object', description: 'x'.repeat(RESPONSE_SCHEMA_LIMITS.maxBytes) }],
    ['too many members', { enum: Array.from({ length: RESPONSE_SCHEMA_LIMITS.maxMembers }, (_, i) => i) }],
  ])('refuse %s: unsupported_response_schema', (_what, schema) => {
    expect(refusal(schema)).toEqual({ code: 'unsupported_response_schema', message: expect.any(String) });
  });

  it('count a $ref as what it names, every time it is used: a chain used twice at each step is refused before it costs', () => {
    const $defs: Record<string, unknown> = { d12: { type: 'object' } };
    for (let i = 0; i < 12; i += 1) $defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    expect(refusal({ $defs, $ref: '#/$defs/d0' })).toEqual({
      code: 'unsupported_response_schema',
      message: expect.stringContaining('members'),
    });
  });

  it('refuse what is not a JSON Schema as before: invalid_response_schema', () => {
    expect(refusal({ type: 'nothing' })).toEqual({ code: 'invalid_response_schema', message: expect.any(String) });
    expect(refusal(withPattern('('))).toEqual({ code: 'invalid_response_schema', message: expect.any(String) });
  });

  it('take ordinary schemas: references without recursion, uniqueItems by value', () => {
    const schema = {
      $defs: { count: { type: 'integer', minimum: 0 } },
      properties: { a: { $ref: '#/$defs/count' }, b: { $ref: '#/$defs/count' }, tags: { uniqueItems: true } },
    };
    expect(refusal(schema)).toBeUndefined();
    expect(resultProblems(schema, { a: 1, b: -1 })).toBe('result/b must be >= 0');
    expect(resultProblems(schema, { tags: [{ x: 1, y: 2 }, 3, { y: 2, x: 1.0 }] })).toBe(
      'result/tags must NOT have duplicate items (items ## 2 and 0 are identical)',
    );
    expect(
      resultProblems(schema, {
        tags: [
          [1, 2],
          [2, 1],
        ],
      }),
    ).toBeUndefined();
  });
});

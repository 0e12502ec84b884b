import { describe, expect, it } from 'vitest';
import { conformingResult, reasonerResultProblems } from '../../adapters/reasoners/result.js';

describe("a result checked against the job's response_schema", () => {
  it('passes a conforming object, and says what is wrong with one that is not', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    expect(conformingResult(schema, { n: 1 })).toEqual({ n: 1 });
    expect(reasonerResultProblems(schema, { n: 'one' })).toBe('result/n must be integer');
    expect(reasonerResultProblems(schema, [1])).toBe('the result must be a JSON object');
  });

  it('checks formats (ajv-formats)', () => {
    const schema = { type: 'object', properties: { at: { type: 'string', format: 'date-time' } } };
    expect(reasonerResultProblems(schema, { at: 'yesterday' })).toBe('result/at must match format "date-time"');
    expect(reasonerResultProblems(schema, { at: '2026-11-23T17:00:00Z' })).toBeUndefined();
  });

  it('takes two different schemas with the same $id, and many more schemas than it keeps compiled', () => {
    const schemaOf = (n: number) => ({ $id: 'https://example.com/result', type: 'object', properties: { n: { const: n } } });
    for (let n = 0; n < 200; n++) {
      expect(reasonerResultProblems(schemaOf(n), { n })).toBeUndefined();
      expect(reasonerResultProblems(schemaOf(n), { n: n + 1 })).toBe('result/n must be equal to constant');
    }
  });

  it('fails invalid_response_schema on a schema that does not compile', () => {
    expect(() => conformingResult({ type: 'object', required: 'n' }, {})).toThrow(
      expect.objectContaining({ code: 'invalid_response_schema' }),
    );
  });
});

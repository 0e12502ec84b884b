import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { schemaFiles } from '../../protocol/json-schemas.js';
import { PURPOSES } from '../../protocol/reasoning.js';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

describe('schemas/', () => {
  it.each(schemaFiles())('schemas/$file is the one its zod schema gives (run `npm run diagrams`)', ({ file, text }) => {
    expect(readFileSync(root(`schemas/${file}`), 'utf8')).toBe(text);
  });

  it('every file is a JSON Schema a validator compiles', () => {
    const ajv = new Ajv2020({ strict: false });
    for (const { file, text } of schemaFiles()) expect(() => ajv.compile(JSON.parse(text) as object), file).not.toThrow();
  });

  it('a purpose result file agrees with its zod schema on an example either way', () => {
    const ajv = new Ajv2020({ strict: false });
    const validate = ajv.compile(JSON.parse(readFileSync(root('schemas/purposes/live_analysis.result.json'), 'utf8')) as object);
    const good = { insights: [{ text: 'Ask about the budget.', kind: 'question', confidence: 0.7 }] };
    const bad = { insights: [{ text: '', kind: 'shout', confidence: 2 }] };
    expect([validate(good), PURPOSES.live_analysis.result.safeParse(good).success]).toEqual([true, true]);
    expect([validate(bad), PURPOSES.live_analysis.result.safeParse(bad).success]).toEqual([false, false]);
  });
});

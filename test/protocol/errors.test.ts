/**
 * The error catalogue (protocol/errors.ts) and PROTOCOL.md's say the same thing, and every code in it
 * is raised somewhere (fastify holds its lib/errors.js to docs/Reference/Errors.md the same way).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  CALLBACK_REFUSALS,
  CLIENT_ERRORS,
  HTTP_ERRORS,
  JOB_ERRORS,
  LOG_ERRORS,
  PROVIDER_ERRORS,
  REPLY_ERRORS,
} from '../../protocol/errors.js';
import { sourceFiles } from '../../visualizations/modules.js';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

/** The catalogue section's tables, by their header row: each row's cells, code first, backticks dropped. */
function tables(): Map<string, string[][]> {
  const text = readFileSync(root('PROTOCOL.md'), 'utf8');
  const start = text.indexOf('### Error catalogue');
  const section = text.slice(start, text.indexOf('\n## ', start));
  const found = new Map<string, string[][]>();
  let header: string | undefined;
  for (const line of section.split('\n')) {
    if (!line.startsWith('|')) {
      header = undefined;
      continue;
    }
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim().replace(/^`(.*)`$/, '$1'));
    if (header === undefined) {
      header = cells.join(' | ');
      found.set(header, []);
    } else if (!cells[0]!.startsWith('---')) found.get(header)!.push(cells);
  }
  return found;
}

const documented = tables();
const catalogue = root('protocol/errors.ts');
// Comments say nothing is raised: they are left out.
const raising = sourceFiles(root('.'))
  .filter((file) => file !== catalogue)
  .map((file) =>
    readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, ''),
  )
  .join('\n');

describe('the error catalogue', () => {
  it('HTTP errors: the same codes with the same statuses', () => {
    const rows = documented.get('code | status | when')!;
    expect(rows.map(([code, status]) => [code, Number(status)]).sort()).toEqual(
      Object.entries(HTTP_ERRORS)
        .map(([code, { status }]) => [code, status])
        .sort(),
    );
  });

  it.each([
    ['error_code | when', REPLY_ERRORS],
    ['provider error code | when', PROVIDER_ERRORS],
    ['job error code | when', JOB_ERRORS],
    ['client error code | when', CLIENT_ERRORS],
  ] as const)('%s: the same codes', (header, codes) => {
    expect(
      documented
        .get(header)!
        .map(([code]) => code)
        .sort(),
    ).toEqual(Object.keys(codes).sort());
  });

  // These are for operators and logs only: the catalogue's text is the documentation's, word for word.
  it.each([
    ['reason | when', CALLBACK_REFUSALS],
    ['code | when', LOG_ERRORS],
  ] as const)('%s: the same codes, described in the same words', (header, codes) => {
    expect(
      documented
        .get(header)!
        .map(([code, when]) => [code, when])
        .sort(),
    ).toEqual(Object.entries(codes).sort());
  });

  it.each(
    [HTTP_ERRORS, REPLY_ERRORS, JOB_ERRORS, CLIENT_ERRORS, CALLBACK_REFUSALS, LOG_ERRORS, PROVIDER_ERRORS].flatMap((codes) =>
      Object.keys(codes),
    ),
  )('%s is raised somewhere in the sources (a code nothing raises goes)', (code) => {
    expect(raising).toContain(`'${code}'`);
  });
});

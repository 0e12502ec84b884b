/** The kit's reports (docs/conformance.md): its list of checks is the kit's; TAP 14, JUnit XML and the summary each name every check's rule. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../../adapters/conformance/check.js';
import { CHECKS_OF, ROLES } from '../../adapters/conformance/kit.js';
import { report } from '../../adapters/conformance/reports.js';
import { names } from '../../adapters/conformance/runner.js';

const results: CheckResult[] = [
  { id: 'form-a.open', spec: '4.2 GET /v1/events rule 5', title: 'opens with `: open`', outcome: 'passed', ms: 3 },
  {
    id: 'form-a.resume',
    spec: '4.2 GET /v1/events rule 7',
    title: 'replays # all',
    outcome: 'failed',
    reason: '2 replayed, not 3 <&>',
    ms: 12,
  },
  { id: 'form-a.ids', spec: '4.2 GET /v1/events rule 3', title: 'ids', outcome: 'skipped', reason: 'needs --script-agent', ms: 0 },
];

it("docs/conformance.md lists every check, in the kit's order, with its rule and its line", () => {
  const text = readFileSync(new URL('../../docs/conformance.md', import.meta.url), 'utf8');
  const table = text.split('<!-- conformance-checks')[1]!.split('\n\n')[0]!;
  const rows = [...table.matchAll(/^\| `([^`]+)` \| (.+?) \| (.+?) \|$/gm)].map((row) => [row[1], row[2], row[3]]);
  expect(rows).toEqual(ROLES.flatMap((role) => CHECKS_OF[role].map((check) => [check.id, check.spec, check.title])));
});

describe('reports', () => {
  it('TAP 14: a plan, ok / not ok with the rule in the YAML block, SKIP with its reason', () => {
    expect(report('tap', 'form-a-host', results)).toBe(
      [
        'TAP version 14',
        '1..3',
        'ok 1 - form-a.open: opens with `: open` (4.2 GET /v1/events rule 5)',
        'not ok 2 - form-a.resume: replays \\# all (4.2 GET /v1/events rule 7)',
        '  ---',
        '  rule: "4.2 GET /v1/events rule 7"',
        '  message: "2 replayed, not 3 <&>"',
        '  ...',
        'ok 3 - form-a.ids: ids (4.2 GET /v1/events rule 3) # SKIP needs --script-agent',
        '',
      ].join('\n'),
    );
  });

  it('JUnit XML: counts, a failure typed by its rule, a skip, escaped text', () => {
    const xml = report('junit', 'form-a-host', results);
    expect(xml).toContain('<testsuite name="form-a-host" tests="3" failures="1" errors="0" skipped="1" time="0.015">');
    expect(xml).toContain('<failure message="2 replayed, not 3 &lt;&amp;&gt;" type="4.2 GET /v1/events rule 7">');
    expect(xml).toContain('<skipped message="needs --script-agent"/>');
    expect(xml).toContain(
      '<testcase classname="form-a-host 4.2 GET /v1/events rule 5" name="form-a.open: opens with `: open`" time="0.003"/>',
    );
  });

  it('the summary: a line a check, the reason of a failure, the counts', () => {
    const text = report('human', 'form-a-host', results);
    expect(text).toContain('✗ form-a.resume  replays # all  [4.2 GET /v1/events rule 7]\n    2 replayed, not 3 <&>');
    expect(text.trimEnd().split('\n').at(-1)).toBe('1 passed, 1 failed, 1 skipped');
  });
});

it('--only and --skip name a check by id, or by a whole section of its rule', () => {
  const check = { id: 'form-a.resume', spec: '4.2 GET /v1/events rule 7' };
  expect(['form-a.resume', 'form-a', '4.2', '4', '4.2 GET /v1/events rule 7'].map((pattern) => names(pattern, check))).toEqual([
    true,
    true,
    true,
    true,
    true,
  ]);
  expect(['form-a.res', '4.20', '2.7', 'form'].map((pattern) => names(pattern, check))).toEqual([false, false, false, false]);
  expect(names('PROTOCOL.md 4', { id: 'x', spec: 'PROTOCOL.md 4.1' })).toBe(true);
});

/**
 * The kit's report, three ways: TAP 14 (`--format tap`) and JUnit XML (`--format junit`) for a CI to
 * read, and a summary for a person (the default), each naming every check's rule.
 */
import type { CheckResult } from './check.js';

export type ReportFormat = 'human' | 'tap' | 'junit';
export const REPORT_FORMATS: readonly ReportFormat[] = ['human', 'tap', 'junit'];

export function report(format: ReportFormat, role: string, results: readonly CheckResult[]): string {
  if (format === 'tap') return tap(results);
  if (format === 'junit') return junit(role, results);
  return human(role, results);
}

export function counts(results: readonly CheckResult[]): Record<CheckResult['outcome'], number> {
  const tally = { passed: 0, failed: 0, skipped: 0 };
  for (const result of results) tally[result.outcome] += 1;
  return tally;
}

/** A line of text, as YAML's double-quoted scalar and TAP's description carry it. */
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

function tap(results: readonly CheckResult[]): string {
  const lines = ['TAP version 14', `1..${results.length}`];
  results.forEach((result, index) => {
    const name = `${result.id}: ${oneLine(result.title)} (${result.spec})`.replace(/#/g, '\\#');
    if (result.outcome === 'skipped') {
      lines.push(`ok ${index + 1} - ${name} # SKIP ${oneLine(result.reason ?? '')}`);
      return;
    }
    lines.push(`${result.outcome === 'passed' ? 'ok' : 'not ok'} ${index + 1} - ${name}`);
    if (result.outcome === 'failed')
      lines.push('  ---', `  rule: ${JSON.stringify(result.spec)}`, `  message: ${JSON.stringify(oneLine(result.reason ?? ''))}`, '  ...');
  });
  return `${lines.join('\n')}\n`;
}

const xml = (text: string) =>
  text
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!)
    // Characters XML 1.0 cannot carry at all.
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd');

function junit(role: string, results: readonly CheckResult[]): string {
  const { failed, skipped } = counts(results);
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const total = results.reduce((sum, result) => sum + result.ms, 0);
  const cases = results.map((result) => {
    const open = `    <testcase classname="${xml(`${role} ${result.spec}`)}" name="${xml(`${result.id}: ${result.title}`)}" time="${seconds(result.ms)}"`;
    if (result.outcome === 'passed') return `${open}/>`;
    const inner =
      result.outcome === 'skipped'
        ? `<skipped message="${xml(result.reason ?? '')}"/>`
        : `<failure message="${xml(oneLine(result.reason ?? ''))}" type="${xml(result.spec)}">${xml(result.reason ?? '')}</failure>`;
    return `${open}>\n      ${inner}\n    </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="assistant-relay conformance" tests="${results.length}" failures="${failed}" skipped="${skipped}" time="${seconds(total)}">`,
    `  <testsuite name="${xml(role)}" tests="${results.length}" failures="${failed}" errors="0" skipped="${skipped}" time="${seconds(total)}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

function human(role: string, results: readonly CheckResult[]): string {
  const mark = { passed: '✓', failed: '✗', skipped: '-' } as const;
  const lines = [`assistant-relay conformance: ${role}`, ''];
  for (const result of results) {
    lines.push(`${mark[result.outcome]} ${result.id}  ${result.title}  [${result.spec}]`);
    if (result.outcome === 'failed') lines.push(`    ${result.reason ?? ''}`);
    if (result.outcome === 'skipped') lines.push(`    skipped: ${result.reason ?? ''}`);
  }
  const { passed, failed, skipped } = counts(results);
  lines.push('', `${passed} passed, ${failed} failed, ${skipped} skipped`);
  return `${lines.join('\n')}\n`;
}

/** What the report's sections share: a target and its row, ratios and figures as the tables write them. */
import { formatValue } from './chart.js';
import type { Spread } from './results.js';

export interface Target {
  readonly what: string;
  readonly goal: string;
  readonly measured: string;
  /** `undefined`: not measured in this run (a quick run, a failed scenario). */
  readonly met: boolean | undefined;
}

/** A target as a row of a report's table of targets. */
export function targetRow(target: Target): string {
  return `| ${target.what} | ${target.goal} | ${target.measured} | ${target.met === undefined ? 'not measured' : target.met ? 'met' : '**missed**'} |`;
}

/** a / b, when both are figures. */
export const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? undefined : a / b;
export const x = (value: number | undefined) => (value === undefined ? 'n/a' : `${value.toFixed(2)}x`);
export const range = (value: Spread, digits = 0) =>
  `${formatValue(value.median)} (${value.min.toFixed(digits)}–${value.max.toFixed(digits)})`;
export const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : 'n/a');
export const cell = (text: string) => text.replace(/\|/g, '\\|');

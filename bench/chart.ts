/**
 * Horizontal bar charts as standalone SVG, for bench/results/: one group of bars a row of the table
 * (a session count, a log size), one bar a contender, its value written at its end. No dependency, no
 * script: a picture GitHub and any browser show as it is.
 */

export interface Bar {
  readonly label: string;
  /** `undefined`: no figure (failed, or the contender cannot do it): drawn as a note, not a bar. */
  readonly value: number | undefined;
  readonly note?: string;
}

export interface BarGroup {
  readonly label: string;
  readonly bars: readonly Bar[];
}

export interface Chart {
  readonly title: string;
  /** What the values are, e.g. `turns/s`. */
  readonly unit: string;
  readonly groups: readonly BarGroup[];
  /** Bars on a log scale, when values span orders of magnitude. */
  readonly log?: boolean;
}

const COLOURS = ['#1f6feb', '#58a6ff', '#d29922', '#e3b341', '#8957e5', '#bc8cff', '#6e7781', '#2da44e'];
const BAR = 16;
const GAP = 4;
const LABEL = 300;
const PLOT = 420;
const VALUE = 110;

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function formatValue(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (value >= 100) return Math.round(value).toLocaleString('en-US');
  if (value >= 10) return value.toFixed(1);
  return value.toPrecision(2);
}

export function barChart(chart: Chart): string {
  const labels = [...new Set(chart.groups.flatMap((group) => group.bars.map((bar) => bar.label)))];
  const colour = (label: string) => COLOURS[labels.indexOf(label) % COLOURS.length]!;
  const values = chart.groups.flatMap((group) => group.bars.map((bar) => bar.value ?? 0)).filter((value) => value > 0);
  const max = Math.max(...values, 1);
  const min = Math.min(...values, max);
  const scale = (value: number) => {
    if (value <= 0) return 0;
    if (!chart.log) return (PLOT * value) / max;
    const floor = Math.log10(min) - 0.3;
    return (PLOT * (Math.log10(value) - floor)) / (Math.log10(max) - floor);
  };
  const rows: string[] = [];
  let y = 40;
  for (const group of chart.groups) {
    rows.push(`<text x="8" y="${y + 12}" class="group">${escape(group.label)}</text>`);
    y += 20;
    for (const bar of group.bars) {
      rows.push(`<text x="${LABEL - 8}" y="${y + BAR - 4}" class="label" text-anchor="end">${escape(bar.label)}</text>`);
      if (bar.value === undefined || !Number.isFinite(bar.value)) {
        rows.push(`<text x="${LABEL + 4}" y="${y + BAR - 4}" class="note">${escape(bar.note ?? 'no figure')}</text>`);
      } else {
        const width = Math.max(1, scale(bar.value));
        rows.push(`<rect x="${LABEL}" y="${y}" width="${width.toFixed(1)}" height="${BAR}" fill="${colour(bar.label)}"/>`);
        rows.push(
          `<text x="${(LABEL + width + 4).toFixed(1)}" y="${y + BAR - 4}" class="value">${escape(`${formatValue(bar.value)} ${chart.unit}${bar.note === undefined ? '' : ` (${bar.note})`}`)}</text>`,
        );
      }
      y += BAR + GAP;
    }
    y += 10;
  }
  const width = LABEL + PLOT + VALUE + 80;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y + 10}" viewBox="0 0 ${width} ${y + 10}" font-family="system-ui, sans-serif" font-size="12">`,
    '<style>.title{font-size:15px;font-weight:600}.group{font-weight:600}.label{fill:#24292f}.value{fill:#24292f}.note{fill:#cf222e;font-style:italic}</style>',
    `<rect width="${width}" height="${y + 10}" fill="#ffffff"/>`,
    `<text x="8" y="22" class="title">${escape(chart.title)}${chart.log ? ' (log scale)' : ''}</text>`,
    ...rows,
    '</svg>',
    '',
  ].join('\n');
}

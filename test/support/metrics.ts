/** Scraping `/metrics` in tests: the Prometheus text format read back into samples, each metric's HELP and TYPE checked. */
import { expect } from 'vitest';
import { request } from './http.js';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Scrape {
  readonly samples: readonly Sample[];
  /** The value of the sample with this name and exactly these labels (undefined: none). */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Reads the text format: every sample line, and a HELP and a TYPE line for every metric. */
export function parseMetrics(text: string): Scrape {
  const samples: Sample[] = [];
  const described = new Set<string>();
  const typed = new Set<string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# HELP ')) described.add(line.split(' ')[2]!);
    else if (line.startsWith('# TYPE ')) typed.add(line.split(' ')[2]!);
    else if (line.length > 0) {
      const match = SAMPLE.exec(line);
      expect(match, `a sample line: ${line}`).not.toBeNull();
      const labels = Object.fromEntries([...(match![2] ?? '').matchAll(LABEL)].map(([, name, value]) => [name!, value!]));
      samples.push({ name: match![1]!, labels, value: Number(match![3]) });
    }
  }
  for (const { name } of samples) {
    const metric = name.replace(/_(bucket|sum|count)$/, '');
    expect(described.has(name) || described.has(metric), `HELP of ${name}`).toBe(true);
    expect(typed.has(name) || typed.has(metric), `TYPE of ${name}`).toBe(true);
  }
  return {
    samples,
    value(name, labels = {}) {
      const wanted = JSON.stringify(Object.entries(labels).sort());
      return samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === wanted)?.value;
    },
  };
}

/** `GET {base}/metrics` with the token: the text format, parsed. */
export async function scrape(base: string, token: string): Promise<Scrape> {
  const response = await request(`${base}/metrics`, { token });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(response.text);
}

/** No label of any sample carries an id (a UUID or a long token) or a raw path: only patterns and small words. */
export function expectNoIds(scraped: Scrape, ids: readonly string[]): void {
  for (const { name, labels } of scraped.samples) {
    for (const value of Object.values(labels)) {
      for (const id of ids) expect(value, `${name} carries an id`).not.toContain(id);
      expect(value, `${name}: ${value}`).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
    }
  }
}

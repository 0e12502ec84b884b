/**
 * Summarises a V8 .cpuprofile (from BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" npm run bench):
 * top functions by self time and by total (inclusive) time, with dist/ positions mapped back to the sources
 * through the build's source maps, so a hot spot reads as engine/chat/file.ts:line.
 *
 *   npx tsx bench/cpuprofile-top.ts DIR/CPU....cpuprofile [--top 25] [--filter substring]
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '25' }, filter: { type: 'string' } },
  allowPositionals: true,
});
const file = positionals[0];
if (file === undefined) {
  console.error('usage: tsx bench/cpuprofile-top.ts FILE.cpuprofile [--top N] [--filter TEXT]');
  process.exit(2);
}
const top = Number(values.top);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const root = fileURLToPath(new URL('..', import.meta.url));

const maps = new Map<string, SourceMap | undefined>();
function where(frame: CallFrame): string {
  if (frame.url === '') return `(${frame.functionName || 'native'})`;
  let path = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  let line = frame.lineNumber + 1;
  if (path.startsWith(root) && existsSync(`${path}.map`)) {
    if (!maps.has(path)) maps.set(path, new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8'))));
    const entry = maps.get(path)?.findEntry(frame.lineNumber, frame.columnNumber) as
      { originalSource?: string; originalLine?: number } | undefined;
    if (entry?.originalSource !== undefined && entry.originalLine !== undefined) {
      const source = entry.originalSource;
      path = source.startsWith('file://') ? fileURLToPath(source) : resolve(dirname(path), source);
      line = entry.originalLine + 1;
    }
  }
  if (path.startsWith(root)) path = relative(root, path);
  path = path.replace(/^.*node_modules\//, 'node_modules/');
  return `${path}:${line}`;
}

// Self time per node from the samples.
const selfUs = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!;
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const key = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'}  ${where(n.callFrame)}`;
const self = new Map<string, number>();
const total = new Map<string, number>();
let all = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const node = byId.get(id)!;
  all += us;
  if (node.callFrame.functionName === '(idle)') idle += us;
  self.set(key(node), (self.get(key(node)) ?? 0) + us);
  // Inclusive: credit each distinct function on the stack once (recursion counted once).
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const k = key(byId.get(at)!);
    if (seen.has(k)) continue;
    seen.add(k);
    total.set(k, (total.get(k) ?? 0) + us);
  }
}
const busy = all - idle;
const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
const show = (title: string, table: Map<string, number>) => {
  console.log(`\n${title} (% of ${(busy / 1000).toFixed(0)} ms busy, of ${(all / 1000).toFixed(0)} ms profiled)`);
  const rows = [...table]
    .filter(([k]) => !/^\((idle|root|program)\)/.test(k) && (values.filter === undefined || k.includes(values.filter)))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top);
  for (const [k, us] of rows) console.log(`${pct(us)}  ${k}`);
};
show('self time', self);
show('total time', total);

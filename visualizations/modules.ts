/**
 * docs/modules.md, read from the sources themselves, so it cannot drift: every module with the first
 * sentence of its header comment, the layers and which uses which, and the engine's modules in detail. Also the layering rule itself
 * (protocol ← machines ← engine ← adapters; storage ← engine; visualizations beside adapters), and each layer's
 * folder rule (a channel's folder never imports the other's), as data a test checks every import against.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import { withSection, type Markers } from './sections.js';

/** A source file, as its path below the package root without the extension: `engine/chat/readers`. */
export type ModuleName = string;

export interface ModuleGraph {
  readonly modules: readonly ModuleName[];
  /** `[from, to]`, each once, sorted. */
  readonly imports: ReadonlyArray<readonly [ModuleName, ModuleName]>;
  /** Each module's purpose: the first sentence of its header comment (`undefined`: it has none). */
  readonly purposes?: Readonly<Record<ModuleName, string | undefined>>;
}

/**
 * What each layer may import besides itself. `index` and `client` are the package's two public faces and
 * may use anything (client.ts must stay browser-safe: a test walks its imports). The pictures are drawn
 * from the machines alone; the inspector, an HTTP server over a log, is an adapter that serves them.
 */
export const LAYER_RULES: Readonly<Record<string, readonly string[]>> = {
  protocol: [],
  machines: ['protocol'],
  storage: ['protocol'],
  engine: ['protocol', 'machines', 'storage'],
  adapters: ['protocol', 'machines', 'storage', 'engine', 'visualizations'],
  visualizations: ['protocol', 'machines'],
  index: ['protocol', 'machines', 'storage', 'engine', 'adapters', 'visualizations'],
  client: ['protocol', 'machines', 'adapters'],
};

export function layerOf(module: ModuleName): string {
  return module.split('/')[0]!;
}

// Relative specifiers only: packages are not ours. `import type` lines count too: a type is a dependency.
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/g;

/** The folders the package is built from, at its root, and its two public faces beside them. */
export const SOURCE_FOLDERS = ['protocol', 'machines', 'storage', 'engine', 'adapters', 'visualizations'] as const;
export const FACES = ['index.ts', 'client.ts'] as const;

/** Every source file of the package at `root`: the source folders' .ts files and the two faces. */
export function sourceFiles(root: string): string[] {
  return [...SOURCE_FOLDERS.flatMap((folder) => listTs(join(root, folder))), ...FACES.map((face) => join(root, face))];
}

/** Reads every source file of the package at `srcDir` and the relative imports between them. */
export function readModuleGraph(srcDir: string): ModuleGraph {
  const files = sourceFiles(srcDir);
  const modules = files.map((file) => nameOf(srcDir, file)).sort();
  const edges = new Set<string>();
  const purposes: Record<ModuleName, string | undefined> = {};
  for (const file of files) {
    const from = nameOf(srcDir, file);
    const text = readFileSync(file, 'utf8');
    purposes[from] = purposeOf(text);
    for (const match of text.matchAll(IMPORT)) {
      const to = posix.normalize(posix.join(posix.dirname(from), match[1]!)).replace(/\.js$/, '');
      if (to !== from) edges.add(`${from}\n${to}`);
    }
  }
  const imports = [...edges].sort().map((edge) => edge.split('\n') as [ModuleName, ModuleName]);
  return { modules, imports, purposes };
}

/** The first sentence of a module's opening `/** … *\/` comment (after a `#!` line), on one line. */
export function purposeOf(text: string): string | undefined {
  const header = /^(?:#![^\n]*\n)?\s*\/\*\*([\s\S]*?)\*\//.exec(text);
  if (header === null) return undefined;
  const prose = header[1]!
    .replace(/^\s*\* ?/gm, '')
    .replace(/\s+/g, ' ')
    .trim();
  // A sentence ends at a full stop before a space and a capital or a backtick, not inside `a.b` or "e.g. x".
  const end = /\.(?= [A-Z`(])/.exec(prose);
  return end === null ? prose : prose.slice(0, end.index + 1);
}

/**
 * Within a layer, what each of its folders may import besides itself (`.` is a file directly in the
 * layer's folder). Each channel has its own folder over a shared one (`core`), and neither channel's
 * imports the other's; among the adapters, each role imports only the pieces it is built from, so the
 * client library stays browser-safe and the plugin stays apart from the client and the CLI.
 */
export const FOLDER_RULES: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  protocol: { '.': ['byo'], byo: [] },
  machines: { core: [], chat: ['core'], reasoning: ['core'], client: ['core'] },
  storage: { '.': [], postgres: ['.'] },
  engine: { core: [], chat: ['core'], reasoning: ['core'], replay: ['core', 'chat', 'reasoning'] },
  adapters: {
    '.': [],
    http: [],
    brokers: [],
    client: [],
    callback: ['http'],
    inspector: ['http'],
    reasoners: ['.', 'http'],
    agents: ['reasoners'],
    plugin: ['reasoners'],
    host: ['http', 'callback', 'agents', 'reasoners', 'plugin', 'inspector'],
    backend: ['http', 'brokers', 'inspector'],
    conformance: [],
    cli: ['.', 'http', 'brokers', 'client', 'callback', 'inspector', 'reasoners', 'agents', 'plugin', 'host', 'backend', 'conformance'],
  },
  visualizations: { '.': [] },
};

/** A module's folder within its layer: `engine/chat/readers` is in `chat`, `adapters/usage-error` in `.`. */
export function folderOf(module: ModuleName): string {
  const parts = module.split('/');
  return parts.length > 2 ? parts[1]! : '.';
}

/** Imports that break the layering rule or a layer's folder rule, as `from -> to`; a folder no rule names is a break too. */
export function layerViolations(graph: ModuleGraph): string[] {
  const breaks = (from: ModuleName, to: ModuleName): boolean => {
    const layer = layerOf(from);
    if (layer !== layerOf(to)) return !(LAYER_RULES[layer] ?? []).includes(layerOf(to));
    const folders = FOLDER_RULES[layer];
    if (folders === undefined) return false;
    const [source, target] = [folderOf(from), folderOf(to)];
    const allowed = folders[source];
    return allowed === undefined || folders[target] === undefined || (source !== target && !allowed.includes(target));
  };
  return graph.imports.filter(([from, to]) => breaks(from, to)).map(([from, to]) => `${from} -> ${to}`);
}

/** The layers and which uses which (an arrow points from the user to what it uses). */
export function layerDiagram(graph: ModuleGraph): string {
  const edges = new Set<string>();
  for (const [from, to] of graph.imports) if (layerOf(from) !== layerOf(to)) edges.add(`  ${layerOf(from)} --> ${layerOf(to)}`);
  return ['flowchart LR', ...[...edges].sort()].join('\n') + '\n';
}

/** Used by nearly every engine module, so left out of its picture. */
const EVERYWHERE = new Set(['protocol', 'machines']);

/** The engine's modules, a box per folder, and what each uses: the other engine modules, and the log (storage) as one box. */
export function engineDiagram(graph: ModuleGraph): string {
  const engine = graph.modules.filter((m) => layerOf(m) === 'engine');
  const id = (m: ModuleName) => (layerOf(m) === 'engine' ? m.slice('engine/'.length).replace(/[/-]/g, '_') : layerOf(m));
  const lines = ['flowchart TD'];
  for (const folder of [...new Set(engine.map(folderOf))]) {
    const inFolder = engine.filter((m) => folderOf(m) === folder);
    lines.push(
      `  subgraph ${folder === '.' ? 'engine' : folder}`,
      ...inFolder.map((m) => `    ${id(m)}["${m.split('/').pop()}"]`),
      '  end',
    );
  }
  const edges = new Set<string>();
  for (const [from, to] of graph.imports) {
    if (layerOf(from) === 'engine' && !EVERYWHERE.has(layerOf(to))) edges.add(`  ${id(from)} --> ${id(to)}`);
  }
  return [...lines, ...[...edges].sort()].join('\n') + '\n';
}

/** Every module by folder, each with its purpose, as Markdown tables. */
export function moduleList(graph: ModuleGraph): string {
  const folders = new Map<string, ModuleName[]>();
  for (const module of graph.modules) {
    const folder = module.includes('/') ? module.slice(0, module.lastIndexOf('/')) : '.';
    folders.set(folder, [...(folders.get(folder) ?? []), module]);
  }
  return [...folders]
    .map(([folder, modules]) => {
      const rows = modules.map((m) => `| [\`${m.split('/').pop()}\`](../${m}.ts) | ${(graph.purposes?.[m] ?? '').replace(/\|/g, '\\|')} |`);
      return [`### ${folder === '.' ? 'the package root' : folder + '/'}`, '', '| module | what it is |', '|---|---|', ...rows, ''].join(
        '\n',
      );
    })
    .join('\n');
}

function listTs(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listTs(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function nameOf(srcDir: string, file: string): ModuleName {
  return relative(srcDir, file).split(sep).join('/').replace(/\.ts$/, '');
}

const MARKERS: Markers = {
  begin: '<!-- modules: generated by `npm run diagrams` from the sources; do not edit by hand -->',
  end: '<!-- /modules -->',
};

/** The document with its generated module section (between the markers) rewritten from `graph`. */
export function withModuleSection(markdown: string, graph: ModuleGraph): string {
  const section = [
    '',
    moduleList(graph),
    '## Who uses whom',
    '',
    'The layers; an arrow points from a module to what it uses:',
    '',
    '```mermaid',
    layerDiagram(graph) + '```',
    '',
    "The engine's modules (arrows into protocol/ and machines/, which nearly all of them use, are left out):",
    '',
    '```mermaid',
    engineDiagram(graph) + '```',
    '',
  ].join('\n');
  return withSection(markdown, MARKERS, section);
}

/**
 * `assistant-relay/client` is browser-safe: following every relative import from `client.ts`, no
 * module imports a Node built-in or a package that only runs in Node.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const NODE_ONLY = /^(node:|better-sqlite3|undici|fastify|pino|ipaddr\.js|fastify-plugin|qrcode)/;

it('the client entry point reaches no Node-only module', () => {
  const root = fileURLToPath(new URL('../../client.ts', import.meta.url));
  const seen = new Set<string>();
  const offending: string[] = [];
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const [, specifier] of text.matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
      if (specifier!.startsWith('.')) visit(resolve(dirname(file), specifier!.replace(/\.js$/, '.ts')));
      else if (NODE_ONLY.test(specifier!)) offending.push(`${file.slice(dirname(root).length + 1)} imports ${specifier}`);
    }
  };
  visit(root);
  expect(seen.size).toBeGreaterThan(10);
  expect(offending).toEqual([]);
});

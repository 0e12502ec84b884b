/**
 * Where the package's own files (providers/, samples/, package.json, dist/) are, from a module's URL. A
 * source module sits `depth` folders below the package root (`protocol/providers.ts` is 1 deep), its
 * build one more (`dist/protocol/providers.js`); the extension says which is running.
 */
export function packageFile(path: string, moduleUrl: string, depth: number): URL {
  const built = !new URL(moduleUrl).pathname.endsWith('.ts');
  return new URL('../'.repeat(built ? depth + 1 : depth) + path, moduleUrl);
}

/** A client of a contender, named by its module and export, so that a load generator process can load it. */

export interface ClientRef {
  /** A module under bench/, e.g. `clients/form-a.js`. */
  readonly module: string;
  /** The export: an `OpenSession` (`minimalClient`, `sdkClient`), an idle stream's opener, an `AwayAndBack`. */
  readonly name: string;
}

/** The function a `ClientRef` names (its caller knows which kind of function it is). */
export async function clientExport<F>(client: ClientRef): Promise<F> {
  const found = ((await import(new URL(`../${client.module}`, import.meta.url).href)) as Record<string, unknown>)[client.name];
  if (typeof found !== 'function') throw new Error(`${client.module} has no ${client.name}`);
  return found as F;
}

/**
 * ELK (elkjs), run in this process: the bundled build carries the layout code itself and needs no worker,
 * so nothing is fetched or spawned. The bundle is CommonJS whose `module.exports` is the constructor, which
 * is also its own `default`; its typings declare only `export default`, which NodeNext reads as that
 * `default` property, so that is the one used: typed, and the constructor at run time.
 *
 * Loaded on the first layout, not with this module: the bundle takes a quarter of a second to load, and
 * the host and the CLI reach this module (through the inspector) whether or not they ever draw.
 */
import type { ELK, ElkNode } from 'elkjs/lib/elk-api.js';

export type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';

let elk: Promise<ELK> | undefined;

/** `graph` laid out: every node, label and edge section with its coordinates. */
export async function layout(graph: ElkNode): Promise<ElkNode> {
  elk ??= import('elkjs/lib/elk.bundled.js').then((elkjs) => new elkjs.default.default());
  return (await elk).layout(graph);
}

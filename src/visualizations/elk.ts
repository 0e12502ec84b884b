/**
 * ELK (elkjs), run in this process: the bundled build carries the layout code itself and needs no worker,
 * so nothing is fetched or spawned. The bundle is CommonJS whose `module.exports` is the constructor, which
 * is also its own `default`; its typings declare only `export default`, which NodeNext reads as that
 * `default` property, so that is the one used: typed, and the constructor at run time.
 */
import elkjs from 'elkjs/lib/elk.bundled.js';
import type { ElkNode } from 'elkjs/lib/elk-api.js';

export type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';

const elk = new elkjs.default();

/** `graph` laid out: every node, label and edge section with its coordinates. */
export function layout(graph: ElkNode): Promise<ElkNode> {
  return elk.layout(graph);
}

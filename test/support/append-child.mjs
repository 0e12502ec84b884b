/**
 * A child process for the durability test: appends batches to an event log through the built storage
 * layer, and after each batch's promise resolves prints how many events are committed, until killed.
 * Usage: node append-child.mjs FILE BATCH_SIZE
 */
import { EventLog } from '../../dist/storage/event-log.js';

const [path, size] = process.argv.slice(2);
const log = EventLog.open({ path, streamOf: (e) => e.stream });
let n = 0;
for (;;) {
  const batch = [];
  for (let i = 0; i < Number(size); i++) batch.push(log.append({ type: 'test.appended', at: Date.now(), stream: 'child', n: n++ }));
  await Promise.all(batch);
  process.stdout.write(`${n}\n`);
}

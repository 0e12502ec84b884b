/**
 * Resume: a client away while 10, 100 and 1,000 turns were answered comes back with the newest id it
 * read. The time from opening the stream again to having read all it will get, and the bytes sent. A
 * server whose protocol has no way to get back what was sent while the client was away says so in its row.
 */
import type { Running } from '../contenders.js';
import { clientExport } from '../clients/ref.js';
import type { AwayAndBack } from '../clients/turn.js';
import { spread, type ResumeRow } from '../results.js';

export interface ResumeOptions {
  readonly away: readonly number[];
  readonly rounds: number;
}

export async function resume(running: readonly Running[], options: ResumeOptions): Promise<ResumeRow[]> {
  const rows: ResumeRow[] = [];
  for (const { server, base } of running) {
    const how = server.resume;
    for (const away of options.away) {
      if (how.kind === 'cannot') {
        rows.push({ server: server.name, away, note: how.why });
        continue;
      }
      try {
        const awayAndBack = await clientExport<AwayAndBack>(how.client);
        const runs = [];
        for (let round = 0; round < options.rounds; round += 1) runs.push(await awayAndBack(base, away));
        const last = runs.at(-1)!;
        rows.push({
          server: server.name,
          away,
          catchUpMs: spread(runs.map((run) => run.catchUpMs)),
          bytes: last.bytes,
          replayed: last.replayed,
          missed: last.missed,
          lost: last.lost,
          ...(how.note === undefined ? {} : { note: how.note }),
        });
      } catch (error) {
        rows.push({ server: server.name, away, note: `failed: ${(error as Error).message.slice(0, 200)}` });
      }
    }
  }
  return rows;
}

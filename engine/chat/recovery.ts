/**
 * What a start does once the log is folded and its own `host.started` is appended: settle what the crash
 * left in flight and re-arm what is time-bound. Every task left pending is settled `interrupted` (Form B:
 * every run cut off posts `interrupted`), since its agent run died with the process and running it again
 * could repeat its side effects; callback attempts in flight are interrupted and made again; idle
 * deadlines and retry timers are re-armed from logged data, firing at once if they passed while down.
 */
import type { CommandPort } from './command-port.js';
import type { IdleDeadlines } from './idle.js';
import type { OutboxPump } from './outbox-pump.js';
import type { ChatProjection } from './projection.js';
import type { Clock } from '../core/clock.js';

export async function recover(parts: {
  readonly projection: ChatProjection;
  readonly commands: CommandPort;
  readonly clock: Clock;
  readonly idle: IdleDeadlines;
  readonly outboxes: OutboxPump;
}): Promise<void> {
  const { projection, commands, clock, idle, outboxes } = parts;
  for (const session_id of projection.sessionIds()) {
    if (projection.isEnded(session_id)) continue;
    const inFlight = projection.taskSession(session_id)?.context.pending ?? projection.conversation(session_id)?.context.running;
    if (inFlight !== undefined && inFlight.size > 0)
      await commands.run({ type: 'interrupt', session_id, epoch: commands.epoch, at: clock.now() });
    idle.touch(session_id);
  }
  await outboxes.recover();
}

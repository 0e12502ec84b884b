/**
 * An id as a person gives it: whole, or its start, as the demo's timeline and a narrow terminal cut it
 * (`3de1685f…`). What a command can list the ids of (a log's sessions, its jobs) it finds by either.
 */
import { UsageError } from './flags.js';

/** How many of the ids a start matches a usage error names. */
const NAMED = 8;

/**
 * The id `given` names among `ids`: the one it is, else the one it starts; `undefined` when none (the caller
 * says where it looked). A start that several ids share is a usage error that names some of them.
 */
export function resolveId(flag: string, given: string, ids: Iterable<string>): string | undefined {
  const starting: string[] = [];
  for (const id of ids) {
    if (id === given) return id;
    if (id.startsWith(given)) starting.push(id);
  }
  if (starting.length <= 1) return starting[0];
  const named = `${starting.slice(0, NAMED).join(', ')}${starting.length > NAMED ? `, and ${starting.length - NAMED} more` : ''}`;
  throw new UsageError(`--${flag} ${given} is the start of ${starting.length} ids (${named}): give more of it`);
}

/**
 * `assistant-relay replay`: folds an event log and prints, per session (or job, integration, pairing), its
 * timeline (each event, its time, the state it moved each session, task and callback delivery to, and its
 * words: the user's text, the reply, a job's purpose and result) and the final states. The log is only read, in one read transaction, so a running host or backend goes on
 * appending meanwhile. `--until` / `--at` stop at a point in the log, to see the state just before a fault;
 * `--verify` folds the log twice and compares the folds after every event.
 *
 * Text folds one stream (a session, a job, …) at a time, in the order they began: the fold of a stream
 * depends on no other, and a block is printed as it is folded. `--json` folds the log in order, writing as
 * it goes.
 */
import { foldsOf, verifyLog } from '../../engine/replay/log.js';
import { entityKey, type Fold, type Moved, type Step } from '../../engine/replay/timeline.js';
import { jobIdOfStream, olderJobStream } from '../../machines/reasoning/backend-events.js';
import { SchemaMismatchError } from '../../storage/errors.js';
import type { LogRecord, StoredEvent } from '../../storage/event-log.js';
import { LogOpenError, LogReader, type LogView, type ReadBounds } from '../../storage/log-reader.js';
import { runClientCommand } from './client.js';
import { UsageError, integer, readFlags, requiredFlag } from './flags.js';
import { resolveId } from './id-prefix.js';
import { Lines, OutputClosed, writeBlock, writeJsonFinal, writeJsonStep } from './replay-output.js';

export const REPLAY_USAGE = `usage: assistant-relay replay --db FILE [--session S | --job J] [--until SEQ | --at TIME] [--json]
       assistant-relay replay --db FILE --verify [--until SEQ | --at TIME]
  --db FILE                a host's, a backend relay's or an assistant plugin's event log, only read: safe while its process runs
  --session S              only that session, its tasks and its callback deliveries (a host's log)
  --job J                  only the reasoning jobs of that id (a backend's or a plugin's log; each integration's job J is its own)
                           (either id whole, or its start when no other id starts so)
  --until SEQ              stop after the event at that position
  --at TIME                stop after the last event at or before TIME (ISO 8601, or epoch milliseconds)
  --json                   one JSON object per line: each timeline entry, then each final state
  --verify                 fold the log twice and compare the folds after every event; exit 1 on a difference
Each flag may also be set as ASSISTANT_RELAY_<FLAG>.`;

const FLAGS = {
  db: { type: 'string' },
  session: { type: 'string' },
  job: { type: 'string' },
  until: { type: 'string' },
  at: { type: 'string' },
  json: { type: 'boolean' },
  verify: { type: 'boolean' },
} as const;

interface ReplayOptions {
  readonly db: string;
  readonly bounds: ReadBounds;
  readonly session: string | undefined;
  readonly job: string | undefined;
  readonly json: boolean;
  readonly verify: boolean;
}

/** `--at`: epoch milliseconds, or an ISO 8601 date and time. */
function timeFlag(text: string): number {
  const at = /^\d+$/.test(text) ? Number(text) : /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isSafeInteger(at))
    throw new UsageError(`--at must be an ISO 8601 time (2025-06-01T12:00:00Z) or epoch milliseconds, not ${JSON.stringify(text)}`);
  return at;
}

function optionsOf(flag: ReturnType<typeof readFlags<typeof FLAGS>>): ReplayOptions {
  const [session, job, until, at] = [flag('session'), flag('job'), flag('until'), flag('at')];
  if (session === '' || job === '') throw new UsageError(`--${session === '' ? 'session' : 'job'} must name one`);
  if (session !== undefined && job !== undefined)
    throw new UsageError('--session and --job: give one (a host log has sessions, a backend log jobs)');
  if (until !== undefined && at !== undefined) throw new UsageError('--until and --at both say where to stop: give one');
  const options = {
    db: requiredFlag(flag, 'db'),
    bounds: {
      ...(until === undefined ? {} : { untilPosition: integer('until', until, 1, Number.MAX_SAFE_INTEGER) }),
      ...(at === undefined ? {} : { untilAt: timeFlag(at) }),
    },
    session,
    job,
    json: flag('json') === true,
    verify: flag('verify') === true,
  };
  const whole = [
    session === undefined ? undefined : '--session',
    job === undefined ? undefined : '--job',
    options.json ? '--json' : undefined,
  ].filter((name) => name !== undefined);
  if (options.verify && whole.length > 0)
    throw new UsageError(`--verify folds the whole log and prints one line: leave out ${whole.join(' and ')}`);
  return options;
}

/** The log, or a usage error that says why the file is not one. */
function openLog(path: string): LogReader {
  try {
    return LogReader.open(path);
  } catch (error) {
    if (error instanceof LogOpenError || error instanceof SchemaMismatchError) throw new UsageError(`--db: ${error.message}`);
    throw error;
  }
}

/** New folds of the log's kind (`undefined` for a log with no events), refusing what replay cannot read and flags of the other kind. */
function checkedFolds(view: LogView, options: ReplayOptions): (() => Fold<unknown>) | undefined {
  const kind = view.kind;
  if (kind === 'unknown') throw new Error(`${options.db} begins with an event that no host's, backend's or plugin's log begins with`);
  if (options.session !== undefined && (kind === 'backend' || kind === 'plugin'))
    throw new UsageError(`--session names a session of a host's log; ${options.db} is a ${kind}'s (--job names a job)`);
  if (options.job !== undefined && kind === 'host')
    throw new UsageError(`--job names a job of a backend's or a plugin's log; ${options.db} is a host's (--session names a session)`);
  return foldsOf(view)?.fold;
}

/**
 * The streams folded as one block, in the order they began: each stream alone, but in a backend's log
 * every stream of one `job_id` together: each integration's job of that id, and the events an older log
 * kept under the id alone (a job open across the upgrade goes on in its new stream).
 */
function blocksOf(view: LogView): string[][] {
  const blocks = new Map<string, string[]>();
  for (const stream of view.streams()) {
    const jobId = view.kind === 'backend' ? jobIdOfStream(stream) : undefined;
    const block = jobId === undefined ? stream : olderJobStream(jobId);
    blocks.set(block, [...(blocks.get(block) ?? []), stream]);
  }
  return [...blocks.values()];
}

/** The events of a block's streams, in the log's order. */
function eventsOf(view: LogView, streams: readonly string[]): Iterable<StoredEvent<LogRecord>> {
  if (streams.length === 1) return view.events(streams[0]);
  // A job's streams are a few events each.
  return streams.flatMap((stream) => [...view.events(stream)]).sort((a, b) => a.position - b.position);
}

function* steps(fold: Fold<unknown>, events: Iterable<StoredEvent<LogRecord>>): Generator<Step> {
  for (const event of events) yield fold.step(event);
}

/** The streams `--session` or `--job` names, by its whole id or its start (none: it names nothing); `undefined` for the whole log. */
function chosenStreams(view: LogView, options: ReplayOptions): string[] | undefined {
  if (options.session !== undefined) {
    // A host's log keeps each session in a stream of its own, and what is the host's in ''.
    const session = resolveId(
      'session',
      options.session,
      [...view.streams()].filter((stream) => stream !== ''),
    );
    return session === undefined ? [] : [session];
  }
  if (options.job === undefined) return undefined;
  // The jobs of an id are their streams in a backend's log (backendStreamOf); a plugin's job is its stream (pluginStreamOf).
  const jobOf = (stream: string) => (view.kind === 'plugin' ? stream : jobIdOfStream(stream));
  const blocks = blocksOf(view);
  const job = resolveId('job', options.job, new Set(blocks.map((block) => jobOf(block[0]!)).filter((id) => id !== undefined)));
  return blocks.find((block) => job !== undefined && jobOf(block[0]!) === job) ?? [];
}

async function replay(view: LogView, options: ReplayOptions, out: Lines): Promise<void> {
  const newFold = checkedFolds(view, options);
  if (options.verify) {
    const { events, difference } = verifyLog(view);
    if (difference === undefined) return out.line(`verified: ${events} events, 0 differences`);
    out.line(`verify: ${events} events, 1 difference: after event #${difference.position} (${difference.type}), ${difference.what}`);
    process.exitCode = 1;
    return;
  }
  if (newFold === undefined) return options.json ? undefined : out.line(`${options.db}: no events`);
  const chosen = chosenStreams(view, options);
  if (chosen?.length === 0) {
    throw new Error(
      `${options.db} has no ${options.session === undefined ? `job ${options.job}` : `session ${options.session}`} through event #${view.end}`,
    );
  }
  if (options.json) return await replayJson(newFold(), chosen === undefined ? view.events() : eventsOf(view, chosen), out);
  out.line(`${view.kind} log ${options.db}: ${view.count} events through #${view.end}`);
  out.line('');
  const width = String(view.end).length;
  for (const block of chosen === undefined ? blocksOf(view) : [chosen]) {
    await writeBlock(out, steps(newFold(), eventsOf(view, block)), block[0] === '' ? `${view.kind}` : `stream ${block.join(', ')}`, width);
  }
}

async function replayJson(fold: Fold<unknown>, events: Iterable<StoredEvent<LogRecord>>, out: Lines): Promise<void> {
  const finals = new Map<string, Moved>();
  for (const step of steps(fold, events)) {
    writeJsonStep(out, step);
    for (const moved of step.moved) finals.set(entityKey(moved.entity), moved);
    await out.drained();
  }
  for (const moved of finals.values()) {
    writeJsonFinal(out, moved);
    await out.drained();
  }
}

export function replayCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand('replay', async () => {
    const options = optionsOf(readFlags(argv, FLAGS, env));
    const reader = openLog(options.db);
    const out = new Lines();
    try {
      await reader.read(options.bounds, (view) => replay(view, options, out));
    } catch (error) {
      // `replay … | head`: the reader has what it wanted.
      if (!(error instanceof OutputClosed)) throw error;
    } finally {
      out.flush();
      reader.close();
    }
  });
}

/**
 * What `assistant-relay replay` prints. For people, a block per session (or job, integration, pairing): a
 * line per event with the time, what it moved to which state and its words, then the final state of each entity in
 * the block. For scripts (`--json`), a line per timeline entry, then one per entity with its final state.
 * Both are written as the fold goes, through a small buffer: a log of any size is never held as text.
 */
import { entityKey, stateText, type Entity, type EntityState, type Moved, type Step } from '../../engine/replay/timeline.js';
import { shorter } from '../../engine/replay/words.js';

/** An event's words on its line: enough to know it by in a terminal. */
const SAYS_WIDTH = 60;

/** The reader of the output went away (`| head`): nothing more is worth folding. */
export class OutputClosed extends Error {
  override readonly name = 'OutputClosed';
}

/**
 * Lines to a stream, written in chunks of about 64 KiB. A pipe takes writes as fast as they come and holds
 * what its reader has not taken yet, so the writer waits (`drained`) while the reader is behind.
 */
export class Lines {
  private pending = '';
  private waiting: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly stream: NodeJS.WritableStream = process.stdout) {
    stream.on('error', () => {
      this.closed = true;
    });
  }

  line(text: string): void {
    this.pending += `${text}\n`;
    if (this.pending.length >= 65_536) this.flush();
  }

  flush(): void {
    if (this.pending === '' || this.closed) return;
    if (!this.stream.write(this.pending)) {
      this.waiting ??= new Promise((resolve) => {
        const done = () => {
          this.stream.off('drain', done);
          this.stream.off('error', done);
          this.waiting = undefined;
          resolve();
        };
        this.stream.on('drain', done);
        this.stream.on('error', done);
      });
    }
    this.pending = '';
  }

  /** Resolves once the stream has room again; an `OutputClosed` once its reader has gone. */
  async drained(): Promise<void> {
    await this.waiting;
    if (this.closed) throw new OutputClosed('the output was closed');
  }
}

/** ISO 8601; a time no Date can hold (a damaged log) as the number it is. */
function isoTime(at: number): string {
  const date = new Date(at);
  return Number.isNaN(date.getTime()) ? String(at) : date.toISOString();
}

/** A Form B session is a conversation (3.2); a job is named with its integration, since its id is unique within it only. */
function nameOf(entity: Entity): string {
  const name = `${entity.kind === 'session' && entity.form === 'B' ? 'conversation' : entity.kind} ${entity.id}`;
  return entity.integration_id === undefined ? name : `${name} (integration ${entity.integration_id})`;
}

function titleOf(entity: Entity): string {
  return entity.form === undefined ? nameOf(entity) : `${nameOf(entity)} (Form ${entity.form})`;
}

/**
 * One stream's block: its title (its first entity, or `fallback` when its first event moved none), a line per
 * event, then each entity's final state. The block's own entity is shown by its state alone, and only when
 * it changed or nothing else moved.
 */
export async function writeBlock(out: Lines, steps: Iterable<Step>, fallback: string, width: number): Promise<void> {
  const finals = new Map<string, Moved>();
  let owner: string | undefined;
  let ownerState: string | undefined;
  for (const step of steps) {
    if (owner === undefined) {
      const first = step.moved[0]?.entity;
      owner = first === undefined ? '' : entityKey(first);
      out.line(first === undefined ? fallback : titleOf(first));
    }
    const parts: string[] = [];
    for (const moved of step.moved) {
      const key = entityKey(moved.entity);
      const text = stateText(moved);
      finals.set(key, moved);
      if (key !== owner) {
        parts.push(`${nameOf(moved.entity)} ${text}`);
        continue;
      }
      if (text !== ownerState || step.moved.length === 1) parts.unshift(text);
      ownerState = text;
    }
    const says = step.says === undefined ? '' : `  ${shorter(step.says, SAYS_WIDTH)}`;
    const where = `${`#${step.position}`.padEnd(width + 1)}  ${isoTime(step.at)}  ${step.type.padEnd(22)}`;
    out.line(`  ${where}  ${parts.join('; ')}${says}`.trimEnd());
    await out.drained();
  }
  if (finals.size > 0) out.line('  final:');
  for (const [key, moved] of finals) out.line(`    ${key === owner ? titleOf(moved.entity) : nameOf(moved.entity)}: ${stateText(moved)}`);
  out.line('');
}

function jsonOf(entity: Entity): Record<string, unknown> {
  return {
    kind: entity.kind,
    id: entity.id,
    ...(entity.session_id === undefined ? {} : { session_id: entity.session_id }),
    ...(entity.integration_id === undefined ? {} : { integration_id: entity.integration_id }),
    ...(entity.form === undefined ? {} : { form: entity.form }),
  };
}

function stateFields({ status, cause }: EntityState): Record<string, unknown> {
  return { ...(status === undefined ? {} : { status }), ...(cause === undefined ? {} : { cause }) };
}

/** A line per entity the step moved: `{"kind":"task","id":…,"session_id":…,"position":…,"at":"ISO","event":…,"state":…,"says":…}`. */
export function writeJsonStep(out: Lines, step: Step): void {
  const says = step.says === undefined ? {} : { says: step.says };
  for (const moved of step.moved) {
    const entry = { position: step.position, at: isoTime(step.at), event: step.type, state: moved.state };
    out.line(JSON.stringify({ ...jsonOf(moved.entity), ...entry, ...stateFields(moved), ...says }));
  }
}

/** `{"kind":…,"id":…,"final":…}`. */
export function writeJsonFinal(out: Lines, moved: Moved): void {
  out.line(JSON.stringify({ ...jsonOf(moved.entity), final: moved.state, ...stateFields(moved) }));
}

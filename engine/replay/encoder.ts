/**
 * What an event touched, encoded (state-codec.ts) for `replay --verify` to compare after every event. Encoding a whole session each time would cost its size per event (a full backlog is a megabyte),
 * so a snapshot is encoded field by field, and each field's encoding is remembered by the field's identity:
 * folded state is never changed in place (an event makes new objects for what it changes), so an event
 * costs the encoding of what it changed.
 */
import { isMachineSnapshot } from 'xstate';
import { encodeState } from '../core/state-codec.js';

export class TouchedEncoder {
  private readonly known = new WeakMap<object, string>();

  /** A statechart snapshot as its value and each field of its context; any other record, field by field. */
  encode(value: unknown): string {
    if (isMachineSnapshot(value)) return `${value.machine.id} ${JSON.stringify(value.value)}\n${this.fields(value.context as object)}`;
    return typeof value === 'object' && value !== null && value.constructor === Object ? this.fields(value) : this.field(value);
  }

  private fields(record: object): string {
    return Object.entries(record)
      .map(([key, item]) => `${key}: ${this.field(item)}`)
      .join('\n');
  }

  private field(value: unknown): string {
    if (value === undefined) return '';
    if (typeof value !== 'object' || value === null) return JSON.stringify(value);
    let text = this.known.get(value);
    if (text === undefined) {
      text = JSON.stringify(encodeState(value));
      this.known.set(value, text);
    }
    return text;
  }
}

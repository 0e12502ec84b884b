/**
 * Folded state as JSON and back: what a snapshot stores, and what `replay --verify` compares. Plain
 * values go as they are; the shapes JSON lacks are tagged:
 *
 * - a `Map` as `{"$map": [[key, value], …]}` and a `Set` as `{"$set": […]}`, in insertion order (the
 *   order is part of the state: pending tasks go in the order they started);
 * - a statechart snapshot as `{"$snapshot": machine id, "value", "context"}`, rebuilt with the machine's
 *   `resolveState` (its status follows from the value), never with XState's own persistence;
 * - a `Window` (machines/window.ts) as `{"$window": [its items]}`: only its own range, not the backing
 *   array it may share with older windows.
 *
 * Object keys are sorted and undefined values left out, so the same state always encodes to the same
 * text, however it was built: two folds are equal exactly when their encodings are.
 */
import { isMachineSnapshot, type AnyStateMachine } from 'xstate';
import type { Window } from '../../machines/core/window.js';

export type Encoded = null | boolean | number | string | Encoded[] | { [key: string]: Encoded };

/** The machines whose snapshots a state may hold, by machine id. */
export type MachineRegistry = Readonly<Record<string, AnyStateMachine>>;

export class StateCodecError extends Error {}

function isWindow(value: object): value is Window<unknown> {
  const keys = Object.keys(value);
  return (
    keys.length === 3 &&
    Array.isArray((value as Window<unknown>).items) &&
    typeof (value as Window<unknown>).start === 'number' &&
    typeof (value as Window<unknown>).end === 'number'
  );
}

export function encodeState(value: unknown): Encoded {
  if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(encodeState);
  if (value instanceof Map) return { $map: [...value].map(([key, item]) => [encodeState(key), encodeState(item)]) };
  if (value instanceof Set) return { $set: [...value].map(encodeState) };
  if (isMachineSnapshot(value))
    return { $snapshot: value.machine.id, value: encodeState(value.value), context: encodeState(value.context) };
  if (typeof value === 'object') {
    if (isWindow(value)) return { $window: value.items.slice(value.start, value.end).map(encodeState) };
    // Keys sorted, and undefined left out: a context written `{...c, x}` and one rebuilt from JSON are equal.
    const out: { [key: string]: Encoded } = {};
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) out[key] = encodeState(item);
    }
    return out;
  }
  throw new StateCodecError(`cannot encode a ${typeof value} in folded state`);
}

/**
 * The text of `{...head, "state": encodeState(maps)}`, one map entry at a time: what a snapshot of a large
 * state is written from, a slice of entries per turn of the event loop, so that no turn stalls on it.
 */
export function* encodeInParts(
  head: Readonly<Record<string, unknown>>,
  maps: Readonly<Record<string, ReadonlyMap<unknown, unknown>>>,
): Generator<string> {
  const opening = JSON.stringify(head);
  yield `${opening.slice(0, -1)}${opening === '{}' ? '' : ','}"state":{`;
  let firstMap = true;
  for (const name of Object.keys(maps).sort()) {
    yield `${firstMap ? '' : ','}${JSON.stringify(name)}:{"$map":[`;
    firstMap = false;
    let firstEntry = true;
    for (const [key, value] of maps[name]!) {
      yield `${firstEntry ? '' : ','}${JSON.stringify([encodeState(key), encodeState(value)])}`;
      firstEntry = false;
    }
    yield ']}';
  }
  yield '}}';
}

export function decodeState(encoded: Encoded, machines: MachineRegistry): unknown {
  if (encoded === null || typeof encoded !== 'object') return encoded;
  if (Array.isArray(encoded)) return encoded.map((item) => decodeState(item, machines));
  if ('$map' in encoded)
    return new Map((encoded.$map as Encoded[][]).map(([key, item]) => [decodeState(key!, machines), decodeState(item!, machines)]));
  if ('$set' in encoded) return new Set((encoded.$set as Encoded[]).map((item) => decodeState(item, machines)));
  if ('$window' in encoded) {
    const items = (encoded.$window as Encoded[]).map((item) => decodeState(item, machines));
    return { items, start: 0, end: items.length } satisfies Window<unknown>;
  }
  if ('$snapshot' in encoded) {
    const machine = machines[encoded.$snapshot as string];
    if (machine === undefined) throw new StateCodecError(`a snapshot of an unknown machine ${JSON.stringify(encoded.$snapshot)}`);
    return machine.resolveState({
      value: decodeState(encoded.value!, machines) as never,
      context: decodeState(encoded.context!, machines) as never,
    });
  }
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(encoded)) out[key] = decodeState(item, machines);
  return out;
}

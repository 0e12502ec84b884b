/** A statechart's state as one line of text, as the replay, the inspector's actors and the tests name it. */
import type { StateValue } from 'xstate';

/** `open.delivered` for `{open: 'delivered'}`. */
export function dotPath(value: StateValue): string {
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, inner]) => (inner === undefined ? key : `${key}.${dotPath(inner)}`))
    .join(',');
}

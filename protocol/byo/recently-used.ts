/**
 * A memo of what a JSON value maps to, keyed by the value's JSON text and bounded: the newest use kept
 * last, the least lately used dropped past `max`. For work a client's value decides (compiling its
 * `response_schema`, its canonical digest): the few values in use stay memoized, while a flood of
 * distinct ones cannot grow memory. Two values with the same JSON text are one key, so `make` must
 * make the same of both: true of values as JSON carries them (no NaN, no `toJSON`). Browser-safe. In
 * byo/, which imports nothing outside its folder, so that both the envelopes and response-schema.ts use it.
 */
export class RecentlyUsed<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly max: number) {}

  /** What `make` made of `value`, made once for the same JSON text while it stays among the `max` lately used. */
  of<T>(value: T, make: (value: T) => V): V {
    const key = JSON.stringify(value);
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    // Made before it is kept: what throws is not memoized, and throws again the next time.
    const made = make(value);
    this.entries.set(key, made);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
    return made;
  }
}

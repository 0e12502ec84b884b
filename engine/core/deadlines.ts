/**
 * Deadlines by key, with one timer (through the `Clock`) for the earliest: idle sessions in the host,
 * job leases and deadlines in the backend. Deadlines are logged data, so an engine re-arms them from its
 * fold on start, and one that passed while it was down fires at once. A binary heap keeps the earliest
 * first, with at most one entry a key in the common case: a deadline moved later (an idle session
 * touched by every event) leaves the key's entry where it is, and the entry goes back in at the new time
 * when it surfaces; one moved earlier goes in anew, its old entry skipped when it surfaces. So the heap
 * holds about one entry a key however often deadlines move, and setting and firing are O(log n).
 */
import type { Clock, TimerHandle } from './clock.js';

interface Entry<K> {
  readonly key: K;
  readonly at: number;
}

export class Deadlines<K> {
  /** The live deadline of each key. */
  private readonly current = new Map<K, number>();
  /** When each key's entry in the heap is due: at or before its live deadline; an entry of another `at` is stale. */
  private readonly queued = new Map<K, number>();
  /** Min-heap by `at`. */
  private readonly heap: Entry<K>[] = [];
  private timer: TimerHandle;
  private armedFor: number | undefined;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    /** A key's deadline passed; it is forgotten before this is called. */
    private readonly onDue: (key: K) => void,
  ) {}

  /** Sets (or moves) the key's deadline. */
  set(key: K, at: number): void {
    if (this.stopped) return;
    this.current.set(key, at);
    const queued = this.queued.get(key);
    if (queued !== undefined && queued <= at) return;
    this.queued.set(key, at);
    this.push({ key, at });
    this.arm();
  }

  delete(key: K): void {
    this.current.delete(key);
  }

  has(key: K): boolean {
    return this.current.has(key);
  }

  get size(): number {
    return this.current.size;
  }

  /** Entries in the heap, stale ones included: what the deadlines hold in memory. */
  get entries(): number {
    return this.heap.length;
  }

  stop(): void {
    this.stopped = true;
    this.current.clear();
    this.queued.clear();
    this.heap.length = 0;
    this.disarm();
  }

  private disarm(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = undefined;
  }

  /** The earliest live entry: stale ones dropped on the way, those of a deadline moved later put back at it. */
  private peek(): Entry<K> | undefined {
    while (this.heap.length > 0) {
      const top = this.heap[0]!;
      const at = this.current.get(top.key);
      if (at === top.at) return top;
      this.pop();
      if (this.queued.get(top.key) !== top.at) continue;
      if (at === undefined) {
        this.queued.delete(top.key);
        continue;
      }
      this.queued.set(top.key, at);
      this.push({ key: top.key, at });
    }
    return undefined;
  }

  private arm(): void {
    const first = this.peek();
    if (first === undefined) return this.disarm();
    if (this.armedFor !== undefined && this.armedFor <= first.at) return;
    this.clock.clearTimeout(this.timer);
    this.armedFor = first.at;
    this.timer = this.clock.setTimeout(() => this.fire(), first.at - this.clock.now());
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = undefined;
    const now = this.clock.now();
    for (let first = this.peek(); first !== undefined && first.at <= now; first = this.peek()) {
      this.pop();
      this.current.delete(first.key);
      this.queued.delete(first.key);
      this.onDue(first.key);
    }
    if (!this.stopped) this.arm();
  }

  private push(entry: Entry<K>): void {
    const heap = this.heap;
    heap.push(entry);
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.at <= heap[i]!.at) break;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    for (let i = 0; ;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < heap.length && heap[left]!.at < heap[least]!.at) least = left;
      if (right < heap.length && heap[right]!.at < heap[least]!.at) least = right;
      if (least === i) return;
      [heap[least], heap[i]] = [heap[i]!, heap[least]!];
      i = least;
    }
  }
}

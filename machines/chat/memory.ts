/**
 * The agent's memory of a conversation: user texts and the assistant's messages, oldest first, within
 * bounds on entries and characters. Shared by both forms; each session (and so each `insights:`
 * session) has its own, so Insights and chat never mix (4.4 rule 5).
 */
import { dropOldest, oldest, push, windowSize, windowToArray, type Window } from '../core/window.js';

export interface MemoryEntry {
  readonly role: 'user' | 'assistant';
  readonly task_id: string;
  readonly text: string;
  readonly at: number;
}

export interface MemoryLimits {
  /** At most this many entries (oldest dropped first)... */
  readonly memoryMaxEntries: number;
  /** ...and at most this many characters of text, the newest entry always kept. */
  readonly memoryMaxChars: number;
}

export interface Memory {
  readonly memory: Window<MemoryEntry>;
  /** Characters of text in `memory`. */
  readonly memoryChars: number;
}

/** Adds to memory within both bounds: one client must not pin unbounded text in memory. */
export function remember(current: Memory, entry: MemoryEntry, limits: MemoryLimits): Memory {
  let memory = current.memory;
  let chars = current.memoryChars + entry.text.length;
  if (windowSize(memory) >= limits.memoryMaxEntries) {
    chars -= oldest(memory)!.text.length;
    memory = dropOldest(memory, 1);
  }
  memory = push(memory, entry, Number.MAX_SAFE_INTEGER);
  while (windowSize(memory) > 1 && chars > limits.memoryMaxChars) {
    chars -= oldest(memory)!.text.length;
    memory = dropOldest(memory, 1);
  }
  return { memory, memoryChars: chars };
}

/** What an agent sees for a user message: memory before that message's own entry (looked for from the end). */
export function memoryBefore(memory: Window<MemoryEntry>, taskId: string): MemoryEntry[] {
  const entries = windowToArray(memory);
  const cut = entries.findLastIndex((entry) => entry.role === 'user' && entry.task_id === taskId);
  return cut < 0 ? entries : entries.slice(0, cut);
}

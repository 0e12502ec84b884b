/** What a session keeps at most: its backlog, its memory and the task ids it remembers (each limit is its own module's). */
import type { Retention } from './backlog.js';
import type { MemoryLimits } from './memory.js';
import type { TaskIdLimits } from './task-ids.js';

export interface SessionLimits extends Retention, MemoryLimits, TaskIdLimits {}

/** What a session keeps at most: its backlog, its memory and the task ids it remembers (each limit is its own module's). */
import type { BacklogLimits } from './backlog.js';
import type { MemoryLimits } from './memory.js';
import type { TaskIdLimits } from './task-ids.js';

export interface SessionLimits extends BacklogLimits, MemoryLimits, TaskIdLimits {}

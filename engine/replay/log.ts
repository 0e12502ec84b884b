/**
 * Replaying a log as one read sees it (`storage/log-reader.ts`): the fold of its kind, a host's folding
 * under the session limits of its last start (what a start of that process folded with), and `--verify`
 * of it. What `replay`, the inspector, the tests' check of every suite's logs and the bench share.
 */
import type { SessionLimits } from '../../machines/chat/task-session.js';
import type { LogView } from '../../storage/log-reader.js';
import { BackendFold } from './backend.js';
import { HostFold, hostLimits } from './host.js';
import { PluginFold } from './plugin.js';
import type { Fold } from './timeline.js';
import { snapshotCheck, verify, type Verification } from './verify.js';

export interface LogFolds {
  /** A fresh fold of the log's kind. */
  readonly fold: () => Fold<unknown>;
  /** A host log's session limits, which its snapshots are compared under; none for a backend's or a plugin's. */
  readonly limits: SessionLimits | undefined;
}

/** The folds of the log's kind; none for a log with no events, or one no fold reads (an unknown one). */
export function foldsOf(view: LogView): LogFolds | undefined {
  if (view.kind === 'backend') return { fold: () => new BackendFold(), limits: undefined };
  if (view.kind === 'plugin') return { fold: () => new PluginFold(), limits: undefined };
  if (view.kind !== 'host') return undefined;
  const limits = hostLimits(view.last('host.started')?.event);
  return { fold: () => new HostFold(limits), limits };
}

/** `replay --verify`: the log folded twice in lockstep, and checked against every snapshot stored within the view. */
export function verifyLog(view: LogView): Verification {
  const folds = foldsOf(view);
  if (folds === undefined) return { events: 0 };
  return verify(
    folds.fold,
    view.events(),
    view.snapshots().map((stored) => snapshotCheck(stored, folds.limits)),
  );
}

/**
 * What a host's snapshot holds: the chat projection's state (every session, conversation and callback
 * outbox), with the session limits it was folded under. A snapshot folded under other limits is not used:
 * a session's backlog and memory depend on them, and a start without snapshots refolds every event under
 * the limits it runs with.
 */
import isEqual from 'fast-deep-equal';
import { conversationMachine } from '../../machines/chat/conversation.js';
import { deliveryMachine } from '../../machines/chat/delivery.js';
import { taskSessionMachine, type SessionLimits } from '../../machines/chat/task-session.js';
import { taskMachine } from '../../machines/chat/task.js';
import type { ChatProjection, ChatState } from './projection.js';
import type { SnapshotCodec } from '../core/snapshots.js';
import { decodeState, encodeInParts, type Encoded } from '../core/state-codec.js';

const MACHINES = { task: taskMachine, session: taskSessionMachine, conversation: conversationMachine, delivery: deliveryMachine };

/** Bumped when what a snapshot holds changes shape: an older one is then refolded from the log. */
const FORMAT = 1;

interface ChatSnapshot {
  readonly format: number;
  readonly kind: 'host';
  readonly limits: SessionLimits;
  readonly state: Encoded;
}

export function chatSnapshotCodec(projection: ChatProjection, limits: SessionLimits): SnapshotCodec<ChatState> {
  return {
    capture() {
      const { sessions, conversations, outboxes } = projection.state();
      return { sessions: new Map(sessions), conversations: new Map(conversations), outboxes: new Map(outboxes) };
    },
    encode: (state) => encodeInParts({ format: FORMAT, kind: 'host', limits }, { ...state }),
    decode(data) {
      const snapshot = JSON.parse(data) as Partial<ChatSnapshot>;
      if (snapshot.kind !== 'host' || snapshot.format !== FORMAT) throw new Error(`it is not a host snapshot of format ${FORMAT}`);
      if (!isEqual(snapshot.limits, limits)) throw new Error('it was folded under other session limits');
      return decodeState(snapshot.state!, MACHINES) as ChatState;
    },
  };
}

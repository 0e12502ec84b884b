/**
 * A host log's replay: the chat projection folds each event as the host does when it starts, and each step
 * says what moved: the session (Form A, the session statechart; Form B, the conversation), its task
 * (Form A, by task_id) and its callback delivery (by number).
 *
 * A settled task leaves its session's pending tasks, and a finished delivery its outbox: the state each
 * moved to is then that of its own statechart (task, delivery) stepped with the event from the snapshot
 * it had just before.
 */
import { evolveDelivery, type DeliverySnapshot } from '../../machines/chat/delivery.js';
import { isDeliveryEvent, isHostEvent, type DomainEvent, type DomainEventType, type HostStarted } from '../../machines/chat/events.js';
import type { SessionLimits, TaskSnapshot } from '../../machines/chat/task-session.js';
import { dotPath } from '../../machines/core/state-value.js';
import { stepper } from '../../machines/core/step.js';
import { taskMachine } from '../../machines/chat/task.js';
import type { LogRecord, StoredEvent } from '../../storage/event-log.js';
import { DEFAULT_SESSION_LIMITS } from '../chat/config.js';
import { ChatProjection, type ChatState } from '../chat/projection.js';
import { TouchedEncoder } from './encoder.js';
import { hostWords } from './words.js';
import { foldStep, forgotten, type Entity, type Fold, type FoldScope, type FoldStart, type Moved, type Step } from './timeline.js';

/** Every event a host logs: the compiler checks the list against `DomainEvent`. */
const HOST_EVENTS: Record<DomainEventType, true> = {
  'host.started': true,
  'sessions.forgotten': true,
  'session.opened': true,
  'task.started': true,
  'task.progressed': true,
  'task.settled': true,
  'message.received': true,
  'reply.queued': true,
  'turn.finished': true,
  'reply.dropped': true,
  'session.ended': true,
  'delivery.attempted': true,
  'delivery.failed': true,
  'delivery.succeeded': true,
  'delivery.abandoned': true,
  'delivery.interrupted': true,
  'delivery.superseded': true,
};
const HOST_EVENT_TYPES: ReadonlySet<string> = new Set(Object.keys(HOST_EVENTS));

const task = stepper(taskMachine);

/** The bounds a host folds its sessions with: those its start logged (the defaults, for a log older than that). */
export function hostLimits(started: LogRecord | undefined): SessionLimits {
  return { ...DEFAULT_SESSION_LIMITS, ...(started as HostStarted | undefined)?.limits };
}

function taskOf(event: DomainEvent): string | undefined {
  return event.type === 'task.started' || event.type === 'task.progressed' || event.type === 'task.settled' ? event.task_id : undefined;
}

function deliveryOf(event: DomainEvent): number | undefined {
  if (isDeliveryEvent(event)) return event.n;
  return 'delivery' in event ? event.delivery?.n : undefined;
}

export class HostFold implements Fold<ChatState> {
  private readonly projection: ChatProjection;
  private readonly scope: FoldScope;
  private readonly encoder = new TouchedEncoder();
  /** The session the last event was about. */
  private session: string | undefined;

  constructor(limits: SessionLimits, start?: FoldStart<ChatState>) {
    this.projection = new ChatProjection(limits);
    if (start !== undefined) this.projection.restore(start.state);
    this.scope = { log: 'host', types: HOST_EVENT_TYPES, after: start?.position ?? 0 };
  }

  step(stored: StoredEvent<LogRecord>): Step {
    return foldStep<DomainEvent>(stored, this.scope, (event) => this.move(event), hostWords);
  }

  touched(): string {
    const id = this.session;
    if (id === undefined) return '';
    const { projection } = this;
    return `${this.encoder.encode(projection.taskSession(id) ?? projection.conversation(id))}\n${this.encoder.encode(projection.outbox(id))}`;
  }

  state(): ChatState {
    return this.projection.state();
  }

  private move(event: DomainEvent): Moved[] {
    if (isHostEvent(event)) {
      this.session = undefined;
      const gone =
        event.type === 'sessions.forgotten' ? forgotten(event.session_ids, (id) => this.sessionOf(id) ?? { kind: 'session', id }) : [];
      this.projection.apply(event);
      return gone;
    }
    const { session_id } = event;
    this.session = session_id;
    const taskId = taskOf(event);
    const n = deliveryOf(event);
    const pending = taskId === undefined ? undefined : this.projection.taskSession(session_id)?.context.pending.get(taskId);
    const queued = n === undefined ? undefined : this.projection.outbox(session_id).queue.get(n);
    this.projection.apply(event);
    const moved: Moved[] = [];
    const session = this.sessionMoved(session_id);
    if (session !== undefined) moved.push(session);
    const task = taskId === undefined ? undefined : this.taskMoved(event, session_id, taskId, pending);
    if (task !== undefined) moved.push(task);
    const delivery = n === undefined ? undefined : this.deliveryMoved(event, session_id, n, queued);
    if (delivery !== undefined) moved.push(delivery);
    return moved;
  }

  private sessionOf(id: string): Entity | undefined {
    const form = this.projection.formOf(id);
    return form === undefined ? undefined : { kind: 'session', id, form };
  }

  private sessionMoved(id: string): Moved | undefined {
    const entity = this.sessionOf(id);
    const snapshot = this.projection.taskSession(id) ?? this.projection.conversation(id);
    if (entity === undefined || snapshot === undefined) return undefined;
    const { endReason } = snapshot.context;
    return endReason === undefined
      ? { entity, state: dotPath(snapshot.value) }
      : { entity, state: dotPath(snapshot.value), status: endReason };
  }

  /** A pending task is in its session; a task that just settled, only in `before` and the event. */
  private taskMoved(event: DomainEvent, session_id: string, id: string, before: TaskSnapshot | undefined): Moved | undefined {
    const entity = { kind: 'task', id, session_id } as const;
    const now = this.projection.taskSession(session_id)?.context.pending.get(id);
    if (now !== undefined) return { entity, state: dotPath(now.value) };
    if (event.type !== 'task.settled' || before === undefined) return undefined;
    const [settled] = task.next(before, { type: 'reply.terminal', reply: event.reply, at: event.at });
    return {
      entity,
      state: dotPath(settled.value),
      status: event.reply.status,
      ...(event.cause === 'agent' ? {} : { cause: event.cause }),
    };
  }

  /** A queued delivery is in its session's outbox; one that just finished, only in `before` and the event. */
  private deliveryMoved(event: DomainEvent, session_id: string, n: number, before: DeliverySnapshot | undefined): Moved | undefined {
    const entity = { kind: 'delivery', id: n, session_id } as const;
    const now =
      this.projection.outbox(session_id).queue.get(n) ??
      (before !== undefined && isDeliveryEvent(event) ? evolveDelivery(before, event) : undefined);
    return now === undefined ? undefined : { entity, state: dotPath(now.value) };
  }
}

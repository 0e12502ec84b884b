/**
 * For people who already use Stately's tools: a process's entities reported to an inspector of
 * `@statelyai/inspect` (`createInspector`, `createWebSocketInspector`, `createBrowserInspector`, …). Each
 * session, task, callback delivery, job, integration and pairing is an actor of its machine (tasks and
 * deliveries children of their session's); each committed event that moved one is an event sent to it,
 * then the snapshot it moved to. What is reported is what the replay folds say (model.ts), the same
 * states the inspector page and `replay` show.
 *
 * An event goes as its type, position and time only: its body holds users' messages and callback tokens,
 * and an inspector may be someone else's service.
 */
import type { createInspector } from '@statelyai/inspect';
import type { StateValue } from 'xstate';
import { entityKey, type Entity, type EntityState, type Step } from '../../engine/replay/timeline.js';
import { STATECHARTS } from '../../visualizations/statecharts.js';
import { machineOf, type InspectorModel } from './model.js';

/** What the process uses of an inspector from `@statelyai/inspect`: any of its `create…Inspector` functions returns one. */
export type StatelyInspector = Pick<ReturnType<typeof createInspector>, 'actor' | 'event' | 'snapshot'>;

type ActorRef = Exclude<Parameters<StatelyInspector['actor']>[0], string>;
type Snapshot = NonNullable<Parameters<StatelyInspector['actor']>[1]>;

interface Reported {
  readonly ref: ActorRef;
  snapshot: Snapshot;
}

/** `{open: 'delivered'}` for `open.delivered` (no machine of ours has parallel states). */
function stateValueOf(path: string): StateValue {
  const [head, ...rest] = path.split('.');
  return rest.length === 0 ? head! : { [head!]: stateValueOf(rest.join('.')) };
}

/**
 * Reports every entity the model knows at its current state, then what each later refresh moves; returns
 * the function that stops reporting.
 */
export function reportToStately(model: InspectorModel, inspector: StatelyInspector): () => void {
  const actors = new Map<string, Reported>();

  const snapshotOf = (state: EntityState, before: Snapshot | undefined): Snapshot => {
    const context = {
      ...(state.status === undefined ? {} : { status: state.status }),
      ...(state.cause === undefined ? {} : { cause: state.cause }),
    };
    // Retention forgot it: it stops where it was.
    if (state.state === 'forgotten') return { ...before, status: 'stopped', context };
    return { status: 'active', value: stateValueOf(state.state), context };
  };

  const actorOf = (entity: Entity, state: EntityState): Reported => {
    const key = entityKey(entity);
    const known = actors.get(key);
    if (known !== undefined) return known;
    // A task's or a delivery's parent is its session; a job's, its integration.
    const parentKey =
      entity.session_id !== undefined
        ? entityKey({ kind: 'session', id: entity.session_id })
        : entity.integration_id !== undefined
          ? entityKey({ kind: 'integration', id: entity.integration_id })
          : undefined;
    const parent = parentKey === undefined ? undefined : actors.get(parentKey);
    const snapshot = snapshotOf(state, undefined);
    const reported: Reported = {
      // What the inspector reads of an actor: its id, its parent, and its machine's definition (`logic.config`).
      ref: Object.assign(
        {
          sessionId: key,
          id: key,
          send: () => {},
          getSnapshot: () => reported.snapshot,
          logic: STATECHARTS.find(({ name }) => name === machineOf(entity))!.machine,
        },
        parent === undefined ? {} : { _parent: parent.ref },
      ),
      snapshot,
    };
    actors.set(key, reported);
    inspector.actor(reported.ref, snapshot);
    return reported;
  };

  for (const { entity, ...state } of model.current()) actorOf(entity, state);

  const report = (step: Step) => {
    for (const { entity, ...state } of step.moved) {
      const actor = actorOf(entity, state);
      const event = { type: step.type, position: step.position, at: step.at };
      inspector.event(actor.ref, event);
      actor.snapshot = snapshotOf(state, actor.snapshot);
      inspector.snapshot(actor.ref, actor.snapshot, { event });
    }
  };
  return model.onSteps((steps) => steps.forEach(report));
}

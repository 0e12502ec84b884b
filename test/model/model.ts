/**
 * Model-based tests, generated from a statechart (issue 13): `xstate/graph` walks the machine and yields
 * every transition it has (from a state, an event it takes there, to the next state); `describeModel`
 * makes a test of each, which starts a fresh subject on the real system (a job, a pairing), drives it
 * along the shortest path to the transition's state and then through it, each event made to happen by
 * its driver, and checks after every step that the system followed the machine. A last test prints the
 * coverage of states and transitions and fails below 100%: a transition added to the machine without a
 * driver fails it, and one the system does not follow fails its own test.
 */
import { getAdjacencyMap, getShortestPaths } from 'xstate/graph';
import { describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { request } from '../support/http.js';
import { readBackendEvents } from '../support/log.js';
import { eventually, waitFor } from '../support/wait.js';

export interface Model<Subject, Event extends EventObject> {
  readonly machine: AnyStateMachine;
  /** The machine's input, and an event of each type it takes (their payloads feed only the context, which the walk ignores). */
  readonly input: unknown;
  readonly events: readonly Event[];
  /** A fresh subject on the real system, in the machine's initial state. */
  start(): Promise<Subject>;
  /** What makes each event happen to the subject, given the state the machine says it is in (and the event, where its payload matters). */
  readonly drivers: { readonly [Type in Event['type']]?: (subject: Subject, from: AnyMachineSnapshot, event: Event) => Promise<void> };
  /**
   * Where a guard reads the context or the event's payload, what tells states apart beyond their value
   * (default: the value alone) and events beyond their type (default: the type alone).
   */
  readonly stateKey?: (snapshot: AnyMachineSnapshot) => string;
  readonly eventKey?: (event: Event) => string;
  /**
   * Transitions (`state event`, as the keys spell them) the system cannot take, each with why: left out of
   * the walk and the coverage, and printed. Each must be a transition the machine has, so a stale entry fails.
   */
  readonly unreachable?: Readonly<Record<string, string>>;
  /** That the system followed the machine: the event is in the log, the subject is in state `to`. */
  check(subject: Subject, event: Event, to: AnyMachineSnapshot): Promise<void>;
}

/** A state is its value: the context (counts, times) would make every step a new state. */
export const stateKey = (snapshot: AnyMachineSnapshot): string => JSON.stringify(snapshot.value);

interface Transition<Event> {
  readonly from: AnyMachineSnapshot;
  readonly event: Event;
  readonly to: AnyMachineSnapshot;
}

const keysOf = <Event extends EventObject>(model: Model<unknown, Event>) => ({
  state: model.stateKey ?? stateKey,
  event: model.eventKey ?? ((event: Event) => event.type),
});

function walkOf<Event extends EventObject>(model: Model<unknown, Event>) {
  const keys = keysOf(model);
  return { input: model.input, events: model.events, serializeState: keys.state, serializeEvent: keys.event } as never;
}

/**
 * Every transition the machine has: from each state it can leave, each event that state has a transition
 * for (one that does nothing, such as a dropped reply's, included: it is a row of the machine's table).
 */
function transitionsOf<Event extends EventObject>(model: Model<unknown, Event>): Array<Transition<Event>> {
  const adjacency = getAdjacencyMap(model.machine, walkOf(model)) as Record<
    string,
    { state: AnyMachineSnapshot; transitions: Record<string, { event: Event; state: AnyMachineSnapshot }> }
  >;
  const takes = (state: AnyMachineSnapshot, event: Event) => model.machine.getTransitionData(state as never, event as never).length > 0;
  return Object.values(adjacency).flatMap(({ state, transitions }) =>
    state.status !== 'active'
      ? []
      : Object.values(transitions)
          .filter(({ event }) => takes(state, event))
          .map(({ event, state: to }) => ({ from: state, event, to })),
  );
}

export function describeModel<Subject, Event extends EventObject>(name: string, model: Model<Subject, Event>): void {
  const key = keysOf(model as Model<unknown, Event>);
  const unreachable = model.unreachable ?? {};
  const machineHas = transitionsOf(model as Model<unknown, Event>);
  const all = machineHas.filter((t) => !(`${key.state(t.from)} ${key.event(t.event)}` in unreachable));
  // A path to a transition never takes a step the system cannot.
  const events = (state: AnyMachineSnapshot) => model.events.filter((event) => !(`${key.state(state)} ${key.event(event)}` in unreachable));
  const paths = getShortestPaths(model.machine, { ...(walkOf(model as Model<unknown, Event>) as object), events } as never);
  const covered = { states: new Set<string>(), transitions: new Set<string>() };

  const drive = async (subject: Subject, from: AnyMachineSnapshot, event: Event, to: AnyMachineSnapshot) => {
    const driver = model.drivers[event.type as Event['type']];
    expect(driver, `a driver for ${event.type}`).toBeDefined();
    await driver!(subject, from, event);
    await model.check(subject, event, to);
    covered.transitions.add(`${key.state(from)} ${key.event(event)}`);
    covered.states.add(key.state(to));
  };

  describe(`the ${name} statechart, driven through the real system`, () => {
    it.each(all.map((t) => [`${key.state(t.from)} --${key.event(t.event)}--> ${key.state(t.to)}`, t] as const))(
      '%s',
      async (_, transition) => {
        const path = paths.find((candidate) => key.state(candidate.state as AnyMachineSnapshot) === key.state(transition.from));
        expect(path, `a path to ${key.state(transition.from)}`).toBeDefined();
        const subject = await model.start();
        let at = path!.steps[0]!.state as AnyMachineSnapshot;
        covered.states.add(key.state(at));
        for (const step of path!.steps.slice(1)) {
          await drive(subject, at, step.event as Event, step.state as AnyMachineSnapshot);
          at = step.state as AnyMachineSnapshot;
        }
        await drive(subject, at, transition.event, transition.to);
      },
    );

    it('covers every state and every transition of the machine', () => {
      const known = new Set(machineHas.map((t) => `${key.state(t.from)} ${key.event(t.event)}`));
      for (const [transition, why] of Object.entries(unreachable)) {
        expect(known, `a transition declared unreachable`).toContain(transition);
        console.log(`model, ${name}: not reachable through the system: ${transition} (${why})`);
      }
      const states = new Set(all.flatMap((t) => [key.state(t.from), key.state(t.to)]));
      const transitions = new Set(all.map((t) => `${key.state(t.from)} ${key.event(t.event)}`));
      const done = [...transitions].filter((key) => covered.transitions.has(key)).length;
      console.log(
        `model coverage, ${name}: states ${[...states].filter((state) => covered.states.has(state)).length}/${states.size}, transitions ${done}/${transitions.size}`,
      );
      for (const state of states) expect(covered.states, `state ${state}`).toContain(state);
      for (const key of transitions) expect(covered.transitions, `transition ${key}`).toContain(key);
    });
  });
}

/**
 * Waits until the log `db` holds one more `type` event about the subject (`about` picks its events) than
 * `seen` counted; then counts again that type and `recount` (events a driver made on the way).
 */
export async function untilLogged(
  log: { readonly db: string; readonly name: string; readonly about: (event: Record<string, unknown>) => boolean },
  type: string,
  seen: Map<string, number>,
  recount: readonly string[] = [],
): Promise<void> {
  const logged = async (each: string) =>
    (await readBackendEvents(log.db)).filter((event) => event.type === each && log.about(event)).length;
  const before = seen.get(type) ?? 0;
  await eventually(
    `${type} of ${log.name}`,
    () => logged(type),
    (count) => count > before,
    { timeoutMs: 5_000, everyMs: 10 },
  );
  for (const each of new Set([type, ...recount])) seen.set(each, await logged(each));
}

/**
 * The events a subject's statechart took, as an `inspect` hook reports them, by type: a check waits for
 * one more of the type its step made than the checks before it have seen.
 */
export class Taken {
  private readonly taken = new Map<string, number>();
  private readonly seen = new Map<string, number>();

  constructor(private readonly name: string) {}

  add(type: string): void {
    this.taken.set(type, (this.taken.get(type) ?? 0) + 1);
  }

  async next(type: string): Promise<void> {
    const want = (this.seen.get(type) ?? 0) + 1;
    await waitFor(`${this.name} to take ${type}`, () => (this.taken.get(type) ?? 0) >= want, { everyMs: 10 });
    this.seen.set(type, want);
  }
}

/**
 * That a session (Form A) or a conversation (Form B) followed its machine: the event is in the host's log,
 * and `GET /v1/sessions/{id}` shows it in state `to`.
 */
export async function followedInView(
  host: { readonly url: string; readonly db: string; readonly token: string },
  subject: { readonly id: string; readonly seen: Map<string, number> },
  event: EventObject,
  to: AnyMachineSnapshot,
  recount: readonly string[],
): Promise<void> {
  await untilLogged(
    { db: host.db, name: subject.id, about: (logged) => logged.session_id === subject.id },
    event.type,
    subject.seen,
    recount,
  );
  const view = await request(`${host.url}/v1/sessions/${subject.id}`, { token: host.token });
  expect([view.status, (view.body as { state?: string }).state], `${subject.id} after ${event.type}`).toEqual([200, to.value]);
}

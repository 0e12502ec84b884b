/**
 * `machines/step.ts` steps every statechart from its compiled transition table (machines/transition-table.ts)
 * where it can, and otherwise with one inert actor scope built from XState's internals, instead of
 * `xstate`'s own `transition()` (which builds an actor and a system per call). This test is the licence for
 * both: for every machine, it explores the states reachable through every event type (a few steps deep)
 * and checks, at every state and for every event, that the stepper and `transition()` agree on the next
 * snapshot (state, status, context, state nodes, tags, output) and the actions; every state the machine
 * can rest in meets every event type it knows. An XState upgrade that changes what the stepper relies on
 * fails here (package.json pins xstate to the minor release this passes on).
 */
import { describe, expect, it, vi } from 'vitest';
import { and, assign, initialTransition, not, setup, transition, type AnyStateMachine } from 'xstate';
import { stepper } from '../../machines/core/step.js';
import { compileTransitions } from '../../machines/core/transition-table.js';
import { conversationMachine, type ConversationSnapshot } from '../../machines/chat/conversation.js';
import { deliveryMachine, type DeliverySnapshot } from '../../machines/chat/delivery.js';
import { integrationMachine } from '../../machines/reasoning/integration.js';
import { jobMachine, type JobSnapshot } from '../../machines/reasoning/job.js';
import { pairingMachine } from '../../machines/reasoning/pairing.js';
import { pluginJobMachine } from '../../machines/reasoning/plugin-job.js';
import { clientSubscriptionMachine } from '../../machines/client/client-subscription.js';
import { clientTaskMachine } from '../../machines/client/client-task.js';
import { taskSessionMachine, type TaskSessionSnapshot } from '../../machines/chat/task-session.js';
import { subscriptionMachine } from '../../machines/core/subscription.js';
import { taskMachine } from '../../machines/chat/task.js';
import { windowToArray, type Window } from '../../machines/core/window.js';
import { LIMITS_SPEC } from './session-fixtures.js';

const leftToXState = setup({
  types: { context: {} as { n: number }, events: {} as { type: 'start' | 'bump' | 'check' | 'stop' } },
  guards: { even: ({ context }) => context.n % 2 === 0, small: ({ context }) => context.n < 3 },
}).createMachine({
  id: 'leftToXState',
  context: { n: 0 },
  initial: 'idle',
  on: { bump: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
  states: {
    idle: { on: { start: 'running' } },
    running: {
      on: {
        check: [
          { guard: and(['even', 'small']), target: 'checked' },
          { guard: not('small'), target: 'done' },
        ],
        stop: 'stopping',
      },
    },
    checked: { always: [{ guard: 'even', target: 'running', actions: assign({ n: ({ context }) => context.n + 1 }) }, { target: 'idle' }] },
    stopping: { always: { target: 'done', actions: assign({ n: 0 }) } },
    done: { type: 'final' },
  },
});

/** An event to send from a snapshot (payloads that must follow the state, such as seqs, read it). */
type EventFor = (snapshot: never) => { type: string };

interface Case {
  readonly name: string;
  readonly machine: AnyStateMachine;
  readonly input: unknown;
  readonly events: readonly EventFor[];
  /** How many events deep to explore (default DEPTH): a machine with a longer chain of steps needs more. */
  readonly depth?: number;
  /** Some of its steps are what a transition table cannot give (a guarded choice, a transient state): XState takes those, the table the rest. */
  readonly guarded?: true;
  /** Of a guarded machine, rows (`value type`) the table must give, never XState: its hot ones. */
  readonly compiled?: readonly string[];
}

const S = 's';
const reply = (task_id: string) => ({ session_id: S, task_id, status: 'message' as const, message_id: `m-${task_id}`, reply_text: 'hi' });
const cb = { url: 'http://127.0.0.1:9/cb', token: 'k' };

const CASES: readonly Case[] = [
  {
    name: 'session',
    machine: taskSessionMachine,
    input: {
      opened: { type: 'session.opened', session_id: S, generation: 'g', form: 'A', at: 1 },
      limits: { ...LIMITS_SPEC, maxReplies: 2, ledgerMaxTasks: 2, taskIdWindow: 2 },
    },
    events: [
      () => ({ type: 'task.started', session_id: S, task_id: 't1', text: 'a', system_prelude: 'p', at: 2 }),
      () => ({ type: 'task.started', session_id: S, task_id: 't2', text: 'b', callback: cb, at: 3 }),
      () => ({
        type: 'task.progressed',
        session_id: S,
        task_id: 't1',
        reply: { session_id: S, task_id: 't1', status: 'typing', label: 'x' },
        at: 4,
      }),
      (s: TaskSessionSnapshot) => {
        const seq = s.context.backlog.lastSeq + 1;
        return {
          type: 'task.settled',
          session_id: S,
          task_id: 't1',
          reply: reply('t1'),
          cause: 'agent',
          epoch: 'e',
          seq,
          data: JSON.stringify(reply('t1')),
          at: 5,
        };
      },
      (s: TaskSessionSnapshot) => ({
        type: 'task.settled',
        session_id: S,
        task_id: 't2',
        reply: reply('t2'),
        cause: 'agent',
        delivery: { n: s.context.deliveries + 1, task_id: 't2' },
        at: 6,
      }),
      () => ({ type: 'reply.dropped', session_id: S, task_id: 't9', status: 'message', reason: 'task_unknown', at: 7 }),
      () => ({ type: 'session.ended', session_id: S, reason: 'host', at: 8 }),
    ],
  },
  {
    name: 'conversation',
    machine: conversationMachine,
    input: {
      opened: { type: 'session.opened', session_id: S, generation: 'g', form: 'B', at: 1 },
      limits: { memoryMaxEntries: 3, memoryMaxChars: 100, taskIdWindow: 2 },
    },
    events: [
      () => ({ type: 'message.received', session_id: S, task_id: 'u1', text: 'a', callback: cb, at: 2 }),
      (c: ConversationSnapshot) => ({
        type: 'reply.queued',
        session_id: S,
        reply: reply('u1'),
        cause: 'agent',
        delivery: { n: c.context.deliveries + 1, task_id: 'u1' },
        at: 3,
      }),
      () => ({ type: 'turn.finished', session_id: S, task_id: 'u1', at: 4 }),
      () => ({ type: 'reply.dropped', session_id: S, task_id: 'u9', status: 'message', reason: 'session_ended', at: 5 }),
      () => ({ type: 'session.ended', session_id: S, reason: 'idle', at: 6 }),
    ],
  },
  {
    name: 'delivery',
    machine: deliveryMachine,
    input: { session_id: S, delivery: { n: 1, task_id: 't' }, callback: cb, body: '{}', progress: false, at: 1 },
    events: [
      (d: DeliverySnapshot) => ({ type: 'delivery.attempted', session_id: S, n: 1, attempt: d.context.attempts + 1, at: 2 }),
      (d: DeliverySnapshot) => ({
        type: 'delivery.failed',
        session_id: S,
        n: 1,
        attempt: d.context.attempts,
        outcome: 'status 503',
        retry_at: 10,
        at: 3,
      }),
      (d: DeliverySnapshot) => ({ type: 'delivery.succeeded', session_id: S, n: 1, attempt: d.context.attempts, status: 200, at: 4 }),
      (d: DeliverySnapshot) => ({
        type: 'delivery.abandoned',
        session_id: S,
        n: 1,
        attempts: d.context.attempts,
        reason: 'permanent',
        outcome: 'status 404',
        at: 5,
      }),
      (d: DeliverySnapshot) => ({ type: 'delivery.interrupted', session_id: S, n: 1, attempt: d.context.attempts, at: 6 }),
      () => ({ type: 'delivery.superseded', session_id: S, n: 1, by: 2, at: 7 }),
    ],
  },
  {
    name: 'job',
    machine: jobMachine,
    input: {
      type: 'job.created',
      job_id: 'j',
      integration_id: 'i',
      purpose: 'live_analysis',
      payload: { a: 1 },
      byo: false,
      response_schema: { type: 'object' },
      provider_kind: 'p',
      deadline_at: 100,
      at: 1,
    },
    events: [
      (j: JobSnapshot) => ({
        type: 'job.delivered',
        job_id: 'j',
        integration_id: 'i',
        delivery: j.context.deliveries + 1,
        seq: j.context.deliveries + 1,
        lease_until: 50,
        at: 2,
      }),
      () => ({ type: 'job.started', job_id: 'j', integration_id: 'i', lease_until: 60, at: 3 }),
      () => ({ type: 'job.renewed', job_id: 'j', integration_id: 'i', lease_until: 70, at: 4 }),
      () => ({ type: 'job.released', job_id: 'j', integration_id: 'i', at: 5 }),
      () => ({ type: 'job.completed', job_id: 'j', integration_id: 'i', result: { ok: 1 }, at: 6 }),
      () => ({ type: 'job.failed', job_id: 'j', integration_id: 'i', error: { code: 'x', message: 'y' }, at: 7 }),
      () => ({ type: 'job.expired', job_id: 'j', integration_id: 'i', at: 8 }),
      () => ({ type: 'job.cancelled', job_id: 'j', integration_id: 'i', at: 9 }),
    ],
  },
  {
    name: 'integration',
    machine: integrationMachine,
    input: {
      type: 'integration.created',
      integration_id: 'i',
      provider_kind: 'p',
      relay_token_digest: 'r',
      client_token_digest: 'c',
      at: 1,
    },
    events: [
      () => ({ type: 'integration.token_rotated', integration_id: 'i', role: 'relay', token_digest: 'r2', at: 2 }),
      () => ({ type: 'integration.token_rotated', integration_id: 'i', role: 'client', token_digest: 'c2', at: 3 }),
      () => ({
        type: 'integration.seen',
        integration_id: 'i',
        plugin: { name: 'p', version: '1' },
        reasoner: { name: 'builtin' },
        status: 'ready',
        schema_versions: { min: 1, max: 1 },
        envelope_versions: { min: 1, max: 1 },
        at: 4,
      }),
      () => ({ type: 'integration.offline', integration_id: 'i', at: 5 }),
      () => ({ type: 'integration.rekey_requested', integration_id: 'i', rekey_id: 'k', kid: 'd', client_key: 'c', mac: 'm', at: 6 }),
      () => ({ type: 'integration.rekey_answered', integration_id: 'i', rekey_id: 'k', assistant_key: 'a', mac: 'n', at: 7 }),
      () => ({ type: 'integration.revoked', integration_id: 'i', at: 8 }),
    ],
  },
  {
    name: 'pairing',
    machine: pairingMachine,
    depth: 7,
    input: {
      type: 'pairing.started',
      pairing_id: 'p',
      handle: 'H',
      provider_kind: 'k',
      schema_version: 1,
      envelope_version: 1,
      client_pairing_token_digest: 'c',
      expires_at: 100,
      at: 1,
    },
    events: [
      () => ({ type: 'pairing.joined', pairing_id: 'p', assistant_pairing_token_digest: 'a', at: 2 }),
      () => ({ type: 'pairing.committed', pairing_id: 'p', commitment: 'm', at: 3 }),
      () => ({ type: 'pairing.client_key_sent', pairing_id: 'p', client_key: 'ck', at: 4 }),
      () => ({ type: 'pairing.revealed', pairing_id: 'p', assistant_key: 'ak', nonce: 'n', at: 5 }),
      () => ({ type: 'pairing.client_confirmed', pairing_id: 'p', confirmation: 'cc', client_token_digest: 't', at: 6 }),
      () => ({ type: 'pairing.completed', pairing_id: 'p', confirmation: 'ac', integration_id: 'i', at: 7 }),
      () => ({ type: 'pairing.aborted', pairing_id: 'p', by: 'client', reason: 'r', at: 8 }),
      () => ({ type: 'pairing.expired', pairing_id: 'p', at: 9 }),
    ],
  },
  {
    name: 'plugin job',
    machine: pluginJobMachine,
    input: { type: 'plugin.job_received', job_id: 'j', job: { job_id: 'j', deadline_at: '2026-01-01T00:00:30.000Z' }, cursor: '1', at: 1 },
    events: [
      () => ({ type: 'plugin.job_started', job_id: 'j', at: 2 }),
      () => ({ type: 'plugin.job_refused', job_id: 'j', at: 3 }),
      () => ({ type: 'plugin.job_finished', job_id: 'j', outcome: { result: { a: 1 } }, at: 4 }),
      () => ({ type: 'plugin.job_closed', job_id: 'j', reason: 'posted', status: 200, at: 5 }),
    ],
  },
  {
    name: 'client task',
    machine: clientTaskMachine,
    input: { session_id: S, task_id: 't', at: 1 },
    events: [
      () => ({ type: 'task.accepted', at: 2 }),
      () => ({ type: 'task.refused', code: 'session_ended', message: 'm', at: 3 }),
      () => ({ type: 'reply.progress', reply: { session_id: S, task_id: 't', status: 'typing', label: 'x' }, at: 4 }),
      () => ({ type: 'reply.terminal', reply: reply('t'), at: 5 }),
      () => ({ type: 'resync.missed', at: 6 }),
    ],
  },
  {
    name: 'client subscription',
    machine: clientSubscriptionMachine,
    input: { session_id: S },
    events: [
      () => ({ type: 'stream.opened', at: 1 }),
      () => ({ type: 'stream.failed', retry_at: 10, at: 2 }),
      () => ({ type: 'reply.id', id: 'e:g:1', at: 3 }),
      () => ({ type: 'stream.dropped', retry_at: 20, at: 4 }),
      () => ({ type: 'retry', at: 5 }),
      () => ({ type: 'close', at: 6 }),
    ],
  },
  {
    name: 'task',
    machine: taskMachine,
    input: { task_id: 't', at: 1, callback: cb },
    events: [
      () => ({ type: 'reply.progress', at: 2 }),
      () => ({ type: 'reply.terminal', reply: reply('t'), at: 3 }),
      () => ({ type: 'resync.missed', at: 4 }),
      () => ({ type: 'resync.unlisted', at: 5 }),
    ],
  },
  {
    name: 'subscription',
    machine: subscriptionMachine,
    input: { keepaliveMs: 100, maxQueuedBytes: 10, at: 0 },
    events: [
      () => ({ type: 'open', replay: 'R', at: 1 }),
      () => ({ type: 'frames', frames: [{ kind: 'progress', task_id: 'a', text: 'p', bytes: 4 }], at: 2 }),
      () => ({ type: 'frames', frames: [{ kind: 'terminal', task_id: 'a', text: 'T', bytes: 4 }], at: 3 }),
      () => ({ type: 'blocked', buffered: 3, at: 4 }),
      () => ({ type: 'drained', at: 5 }),
      () => ({ type: 'tick', at: 500 }),
      () => ({ type: 'close', reason: 'session_ended', at: 6 }),
      () => ({ type: 'close', reason: 'host_closing', at: 7 }),
      () => ({ type: 'disconnected', at: 8 }),
    ],
  },
  {
    // What the table leaves to XState: a higher-order guard, an eventless transition that is guarded or acts.
    name: 'steps the table leaves to XState',
    machine: leftToXState,
    guarded: true,
    compiled: ['"idle" start', '"idle" bump', '"running" bump'],
    input: undefined,
    events: [() => ({ type: 'start' }), () => ({ type: 'bump' }), () => ({ type: 'check' }), () => ({ type: 'stop' })],
  },
];

const DEPTH = 5;

/** Windows (machines/window.ts) share a backing array between snapshots: compare what each one holds. */
function held(value: unknown): unknown {
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, held(v)]));
  if (value instanceof Set || value === null || typeof value !== 'object') return value;
  // A statechart snapshot (a task's, inside a session) is its state and context; the rest is the machine.
  if ('machine' in value && 'context' in value && 'value' in value) return { value: value.value, context: held(value.context) };
  if ('items' in value && 'start' in value && 'end' in value) return windowToArray(value as Window<unknown>).map(held);
  if (Array.isArray(value)) return value.map(held);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, held(v)]));
}

interface Traced {
  value: unknown;
  status: string;
  context: unknown;
  output?: unknown;
  error?: unknown;
  _nodes: readonly { id: string }[];
  tags: ReadonlySet<string>;
  children: object;
  historyValue: object;
}

const trace = (snapshot: Traced, actions: readonly { type: string; params?: unknown }[]) => ({
  // The same fields, in the same order (the transition table writes them one by one).
  fields: Object.keys(snapshot),
  value: snapshot.value,
  status: snapshot.status,
  context: held(snapshot.context),
  output: snapshot.output,
  error: snapshot.error,
  nodes: snapshot._nodes.map((node) => node.id),
  tags: [...snapshot.tags],
  children: snapshot.children,
  historyValue: snapshot.historyValue,
  actions: actions.map(({ type, params }) => ({ type, params: held(params) })),
});

describe('stepper equals xstate transition() on every reachable state and event', () => {
  it.each(CASES)('$name', ({ machine, input, events, depth: maxDepth = DEPTH, guarded, compiled: hot = [] }) => {
    const ours = stepper(machine);
    const interpret = vi.spyOn(machine, 'transition');
    const [initial, initialActions] = ours.initial(input);
    const [theirInitial, theirInitialActions] = initialTransition(machine, input);
    expect(trace(initial, initialActions)).toEqual(trace(theirInitial, theirInitialActions));
    // A later start is the first one's snapshot with its own context.
    const [again, againActions] = ours.initial(input);
    expect(trace(again, againActions)).toEqual(trace(theirInitial, theirInitialActions));

    const seen = new Set<string>();
    const pairs = new Set<string>();
    let interpretedSteps = 0;
    const interpretedPairs = new Set<string>();
    const visitedValues = new Set<string>();
    const eventTypes = new Set<string>();
    let frontier = [initial];
    let compared = 0;
    for (let depth = 0; depth < maxDepth && frontier.length > 0; depth += 1) {
      const next: Array<typeof initial> = [];
      for (const snapshot of frontier) {
        visitedValues.add(JSON.stringify(snapshot.value));
        if (snapshot.status !== 'active') continue;
        for (const make of events) {
          const event = make(snapshot as never);
          eventTypes.add(event.type);
          const calls = interpret.mock.calls.length;
          const [mine, mineActions] = ours.next(snapshot, event as never);
          interpretedSteps += interpret.mock.calls.length - calls;
          pairs.add(`${JSON.stringify(snapshot.value)} ${event.type}`);
          if (interpret.mock.calls.length > calls) interpretedPairs.add(`${JSON.stringify(snapshot.value)} ${event.type}`);
          const [theirs, theirActions]: [Traced, readonly { type: string; params?: unknown }[]] = transition(
            machine,
            snapshot,
            event as never,
          );
          expect(trace(mine, mineActions), `${event.type} from ${JSON.stringify(snapshot.value)}`).toEqual(trace(theirs, theirActions));
          compared += 1;
          // Stepping nothing leaves the very snapshot, as XState does (a fold relies on it to see that nothing moved).
          if (theirs === snapshot) expect(mine).toBe(snapshot);
          // A snapshot restored as the snapshot codec restores it (`resolveState`) steps alike too.
          const restored = machine.resolveState({ value: snapshot.value, context: snapshot.context });
          const restoredCalls = interpret.mock.calls.length;
          const [mineRestored, mineRestoredActions] = ours.next(restored as never, event as never);
          interpretedSteps += interpret.mock.calls.length - restoredCalls;
          const [theirsRestored, theirRestoredActions]: [Traced, readonly { type: string; params?: unknown }[]] = transition(
            machine,
            restored,
            event as never,
          );
          expect(trace(mineRestored, mineRestoredActions), `${event.type} from a restored ${JSON.stringify(snapshot.value)}`).toEqual(
            trace(theirsRestored, theirRestoredActions),
          );
          const key = JSON.stringify([mine.value, mine.status, held(mine.context)], (_, v: unknown) =>
            v instanceof Map || v instanceof Set ? [...v] : v,
          );
          if (!seen.has(key)) {
            seen.add(key);
            next.push(mine);
          }
        }
      }
      frontier = next;
    }
    // Every resting state of the machine was reached, and every event type it takes was sent from some state.
    type Node = { states: Record<string, Node>; path: string[]; always?: unknown[] };
    const leaves = (node: Node): Node[] => {
      const children = Object.values(node.states);
      return children.length === 0 ? [node] : children.flatMap(leaves);
    };
    const stateValue = (path: string[]): string =>
      JSON.stringify(path.reduceRight<unknown>((inner, key) => (inner === undefined ? key : { [key]: inner }), undefined));
    for (const node of leaves(machine.root as unknown as Node)) {
      // A transient state (only `always` out of it) is passed through, never rested in.
      if ((node.always?.length ?? 0) > 0) continue;
      expect(visitedValues, `state ${node.path.join('.')} reached`).toContain(stateValue(node.path));
      // A final state takes no more events; every other one was sent every event type the machine knows.
      if ((node as unknown as { type: string }).type === 'final') continue;
      for (const type of eventTypes) expect(pairs, `${type} sent in ${node.path.join('.')}`).toContain(`${stateValue(node.path)} ${type}`);
    }
    expect([...eventTypes]).toEqual(expect.arrayContaining(machine.events));
    expect(compared).toBeGreaterThan(events.length);
    // Every machine compiles; the table gives every step of one without guards or transient states, and
    // most of one with them (XState takes only those steps).
    expect(compileTransitions(machine, { self: undefined, system: undefined })).toBeDefined();
    if (guarded === undefined) expect(interpretedSteps, 'steps XState took').toBe(0);
    for (const row of hot) {
      expect(pairs, `${row} stepped`).toContain(row);
      expect(interpretedPairs, `${row} from the table`).not.toContain(row);
    }
    interpret.mockRestore();
  });
});

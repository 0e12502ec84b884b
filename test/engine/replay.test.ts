/** Replay's folds driven by events alone: each event's step, each entity's timeline, and verify. */
import { describe, expect, it } from 'vitest';
import { BackendFold } from '../../engine/replay/backend.js';
import { HostFold, hostLimits } from '../../engine/replay/host.js';
import { PluginFold } from '../../engine/replay/plugin.js';
import { ReplayError, timelines, type Fold, type Step } from '../../engine/replay/timeline.js';
import { verify } from '../../engine/replay/verify.js';
import { DEFAULT_SESSION_LIMITS } from '../../engine/chat/config.js';
import { encodeState } from '../../engine/core/state-codec.js';
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { DomainEvent } from '../../machines/chat/events.js';
import type { PluginEvent } from '../../machines/reasoning/plugin-job-events.js';
import type { LogRecord, StoredEvent } from '../../storage/event-log.js';

const cb = { url: 'http://127.0.0.1:9/cb', token: 'k' };
const message = (session_id: string, task_id: string, text: string) => ({
  session_id,
  task_id,
  status: 'message' as const,
  message_id: `m-${task_id}`,
  reply_text: text,
});
const interrupted = (session_id: string, task_id: string) => ({
  session_id,
  task_id,
  status: 'errored' as const,
  error_code: 'interrupted',
  error_message: 'the host restarted while the task was pending',
});

/** A Form A turn answered, a second cut off by a restart; a Form B conversation whose two deliveries end apart. */
const HOST: DomainEvent[] = [
  { type: 'host.started', epoch: 'e1', form: 'A', at: 1 },
  { type: 'session.opened', session_id: 'a', generation: 'g', form: 'A', at: 2 },
  { type: 'task.started', session_id: 'a', task_id: 't1', text: 'hi', at: 3 },
  {
    type: 'task.progressed',
    session_id: 'a',
    task_id: 't1',
    reply: { session_id: 'a', task_id: 't1', status: 'typing', label: 'thinking' },
    at: 4,
  },
  {
    type: 'task.settled',
    session_id: 'a',
    task_id: 't1',
    reply: message('a', 't1', 'hello'),
    cause: 'agent',
    epoch: 'e1',
    seq: 1,
    data: JSON.stringify(message('a', 't1', 'hello')),
    at: 5,
  },
  { type: 'task.started', session_id: 'a', task_id: 't2', text: 'and?', at: 6 },
  { type: 'host.started', epoch: 'e2', form: 'B', at: 7 },
  {
    type: 'task.settled',
    session_id: 'a',
    task_id: 't2',
    reply: interrupted('a', 't2'),
    cause: 'interrupted',
    epoch: 'e2',
    seq: 2,
    data: JSON.stringify(interrupted('a', 't2')),
    at: 8,
  },
  { type: 'session.opened', session_id: 'b', generation: 'h', form: 'B', at: 9 },
  { type: 'message.received', session_id: 'b', task_id: 'u1', text: 'yo', callback: cb, at: 10 },
  { type: 'reply.queued', session_id: 'b', reply: message('b', 'u1', 'one'), cause: 'agent', delivery: { n: 1, task_id: 'u1' }, at: 11 },
  { type: 'reply.queued', session_id: 'b', reply: message('b', 'u1', 'two'), cause: 'agent', delivery: { n: 2, task_id: 'u1' }, at: 12 },
  { type: 'turn.finished', session_id: 'b', task_id: 'u1', at: 13 },
  { type: 'delivery.attempted', session_id: 'b', n: 1, attempt: 1, at: 14 },
  { type: 'delivery.failed', session_id: 'b', n: 1, attempt: 1, outcome: 'status 503', retry_at: 20, at: 15 },
  { type: 'delivery.attempted', session_id: 'b', n: 1, attempt: 2, at: 20 },
  { type: 'delivery.succeeded', session_id: 'b', n: 1, attempt: 2, status: 200, at: 21 },
  { type: 'delivery.attempted', session_id: 'b', n: 2, attempt: 1, at: 22 },
  { type: 'delivery.abandoned', session_id: 'b', n: 2, attempts: 1, reason: 'permanent', outcome: 'status 404', at: 23 },
  { type: 'session.ended', session_id: 'b', reason: 'idle', at: 24 },
];

function stored<E extends LogRecord>(events: readonly E[], from = 1): StoredEvent<LogRecord>[] {
  return events.map((event, i) => ({ position: from + i, event }));
}

function fold(events: readonly StoredEvent<LogRecord>[], into: Fold<unknown> = new HostFold(DEFAULT_SESSION_LIMITS)): Step[] {
  return events.map((event) => into.step(event));
}

/** Each entity's states, oldest first, by `kind id`. */
function states(steps: Step[]): Record<string, string[]> {
  const all: Record<string, string[]> = {};
  for (const { entity, entries } of timelines(steps).values()) {
    all[`${entity.kind} ${entity.id}`] = entries.map((entry) => [entry.state, entry.status, entry.cause].filter(Boolean).join(' '));
  }
  return all;
}

describe('host log replay', () => {
  it('moves each session, task and callback delivery, event by event, to the state its statechart takes', () => {
    expect(states(fold(stored(HOST)))).toEqual({
      'session a': ['open', 'open', 'open', 'open', 'open', 'open'],
      'task t1': ['pending', 'pending', 'settled message'],
      'task t2': ['pending', 'settled errored interrupted'],
      'session b': ['open', 'open', 'open', 'open', 'open', 'open', 'open', 'open', 'open', 'open', 'open', 'ended idle'],
      'delivery 1': ['waiting', 'attempting', 'waiting', 'attempting', 'succeeded'],
      'delivery 2': ['waiting', 'attempting', 'abandoned'],
    });
  });

  it('says for each entry its event, position and time, and keeps a final state per entity', () => {
    const all = timelines(fold(stored(HOST)));
    expect(all.get('task:a:t2')).toEqual({
      entity: { kind: 'task', id: 't2', session_id: 'a' },
      entries: [
        { position: 6, at: 6, type: 'task.started', says: '“and?”', state: 'pending' },
        {
          position: 8,
          at: 8,
          type: 'task.settled',
          says: 'interrupted: the host restarted while the task was pending',
          state: 'settled',
          status: 'errored',
          cause: 'interrupted',
        },
      ],
      final: { state: 'settled', status: 'errored', cause: 'interrupted' },
    });
    expect(all.get('session::b')).toMatchObject({
      entity: { kind: 'session', id: 'b', form: 'B' },
      final: { state: 'ended', status: 'idle' },
    });
    expect(all.get('delivery:b:2')?.final).toEqual({ state: 'abandoned' });
    // A host's start moves no session.
    expect(fold(stored(HOST))[6]).toEqual({ position: 7, at: 7, type: 'host.started', moved: [] });
  });

  it("says each event's words: the user's text and the reply in quotes, progress, an error, a failed delivery", () => {
    expect(fold(stored(HOST)).map((step) => step.says ?? '')).toEqual([
      '',
      '',
      '“hi”',
      'typing thinking',
      '“hello”',
      '“and?”',
      '',
      'interrupted: the host restarted while the task was pending',
      '',
      '“yo”',
      '“one”',
      '“two”',
      '',
      '',
      'status 503',
      '',
      '',
      '',
      '',
      '',
    ]);
  });

  it('folding up to a position leaves every entity as it was just after that event (--until)', () => {
    const finals = (until: number) =>
      [...timelines(fold(stored(HOST).slice(0, until))).values()].map(({ entity, final }) => `${entity.kind} ${entity.id}: ${final.state}`);
    expect(finals(7)).toEqual(['session a: open', 'task t1: settled', 'task t2: pending']);
    expect(finals(16)).toEqual([
      'session a: open',
      'task t1: settled',
      'task t2: settled',
      'session b: open',
      'delivery 1: attempting',
      'delivery 2: waiting',
    ]);
  });

  it('folds with the limits of the start it is given, and the defaults for a start that logged none', () => {
    const limits = { ...DEFAULT_SESSION_LIMITS, memoryMaxEntries: 3 };
    expect(hostLimits({ type: 'host.started', epoch: 'e', form: 'A', limits, at: 1 } as LogRecord)).toEqual(limits);
    expect(hostLimits(HOST[0])).toEqual(DEFAULT_SESSION_LIMITS);
    expect(hostLimits(undefined)).toEqual(DEFAULT_SESSION_LIMITS);
  });

  it('goes on from a stored state and its position, and refuses an event at or before that position', () => {
    const first = new HostFold(DEFAULT_SESSION_LIMITS);
    fold(stored(HOST).slice(0, 10), first);
    const start = { state: first.state(), position: 10 };
    const resumed = new HostFold(DEFAULT_SESSION_LIMITS, start);
    const rest = fold(stored(HOST).slice(10), resumed);
    expect(rest).toEqual(fold(stored(HOST)).slice(10));
    expect(() => new HostFold(DEFAULT_SESSION_LIMITS, start).step(stored(HOST)[9]!)).toThrow(
      "event #10 (message.received) comes before the fold's start, #10",
    );
  });

  it('says retention forgot a session, as the last state of its timeline', () => {
    const forgetting: DomainEvent[] = [
      ...HOST,
      { type: 'sessions.forgotten', session_ids: ['b', 'gone-before'], ended_before: 25, at: 25 },
    ];
    const all = timelines(fold(stored(forgetting)));
    expect(all.get('session::b')?.entries.at(-1)).toEqual({ position: 21, at: 25, type: 'sessions.forgotten', state: 'forgotten' });
    expect(all.get('session::gone-before')?.entity).toEqual({ kind: 'session', id: 'gone-before' });
    expect(verify(() => new HostFold(DEFAULT_SESSION_LIMITS), stored(forgetting))).toEqual({ events: forgetting.length });
  });

  it('names the event it cannot fold: an unknown type, or a fact its statecharts cannot take', () => {
    const unknown = () => fold([...stored(HOST.slice(0, 3)), { position: 4, event: { type: 'task.exploded', at: 4 } }]);
    expect(unknown).toThrow(ReplayError);
    expect(unknown).toThrow('event #4 (task.exploded) is not an event of a host log');
    const lost: DomainEvent = { type: 'delivery.attempted', session_id: 'a', n: 9, attempt: 1, at: 4 };
    expect(() => fold(stored([...HOST.slice(0, 3), lost]))).toThrow(/^event #4 \(delivery\.attempted\) cannot be folded: .*delivery 9/);
    expect(() => fold(stored([{ type: 'backend.started', epoch: 'x', at: 1 }]))).toThrow(
      'event #1 (backend.started) is not an event of a host log',
    );
  });
});

const J = 'job-1';
const I = 'int-1';
const BACKEND: BackendEvent[] = [
  { type: 'backend.started', epoch: 'b1', at: 1 },
  {
    type: 'integration.created',
    integration_id: I,
    provider_kind: 'assistant-relay',
    relay_token_digest: 'r',
    client_token_digest: 'c',
    at: 2,
  },
  {
    type: 'job.created',
    job_id: J,
    integration_id: I,
    purpose: 'live_analysis',
    payload: {},
    byo: false,
    response_schema: { type: 'object' },
    provider_kind: 'assistant-relay',
    deadline_at: 60_000,
    at: 3,
  },
  {
    type: 'integration.seen',
    integration_id: I,
    plugin: { name: 'p', version: '1.0.0' },
    reasoner: { name: 'builtin' },
    status: 'ready',
    schema_versions: { min: 1, max: 1 },
    envelope_versions: { min: 1, max: 1 },
    at: 4,
  },
  { type: 'job.delivered', job_id: J, integration_id: I, delivery: 1, seq: 1, lease_until: 600, at: 5 },
  { type: 'job.started', job_id: J, integration_id: I, lease_until: 900, at: 6 },
  { type: 'job.completed', job_id: J, integration_id: I, result: { insights: [] }, at: 7 },
  { type: 'integration.offline', integration_id: I, at: 8 },
];

describe('backend log replay', () => {
  it('moves each job (with its job state) and integration to the state its statechart takes', () => {
    expect(states(fold(stored(BACKEND), new BackendFold()))).toEqual({
      'integration int-1': ['active.unseen', 'active.online', 'active.offline'],
      'job job-1': ['open.created created', 'open.delivered delivered', 'open.running running', 'completed completed'],
    });
  });

  it("says a job's purpose, its result (sealed, for a BYO job) and its error", () => {
    const says = (events: BackendEvent[]) => fold(stored(events), new BackendFold()).flatMap((step) => step.says ?? []);
    expect(says(BACKEND)).toEqual(['live_analysis', 'result {"insights":[]}']);
    const created = { ...(BACKEND[2] as Extract<BackendEvent, { type: 'job.created' }>), byo: true };
    const envelope = { kid: 'k', nonce: 'n', ciphertext: 'c' };
    const sealed: BackendEvent[] = [
      ...BACKEND.slice(0, 2),
      created,
      { type: 'job.completed', job_id: J, integration_id: I, result: envelope, at: 4 },
    ];
    expect(says(sealed)).toEqual(['live_analysis, sealed (BYO)', 'result sealed (BYO)']);
    const error = { code: 'reasoner_failed', message: 'no\nmodel' };
    const failed: BackendEvent[] = [...BACKEND.slice(0, 3), { type: 'job.failed', job_id: J, integration_id: I, error, at: 4 }];
    expect(says(failed)).toEqual(['live_analysis', 'reasoner_failed: no␊model']);
  });

  it('says retention forgot a job, named by its integration (or, in an older log, by its id alone)', () => {
    for (const forgotten of [{ jobs: { [I]: [J] } }, { job_ids: [J] }]) {
      const forgetting: BackendEvent[] = [
        ...BACKEND,
        { type: 'backend.forgotten', ...forgotten, pairing_ids: [], sent: { [I]: 1 }, ended_before: 9, at: 9 },
      ];
      const steps = fold(stored(forgetting), new BackendFold());
      expect(states(steps)['job job-1']?.at(-1)).toBe('forgotten');
      expect(steps.at(-1)!.moved).toEqual([{ entity: { kind: 'job', id: J, integration_id: I }, state: 'forgotten' }]);
    }
  });

  it("keeps two integrations' jobs of one id apart: each its own entity, keyed by its integration", () => {
    const other = 'int-2';
    const theirs: BackendEvent[] = [
      ...BACKEND,
      {
        type: 'integration.created',
        integration_id: other,
        provider_kind: 'assistant-relay',
        relay_token_digest: 'r',
        client_token_digest: 'c',
        at: 9,
      },
      { ...(BACKEND[2] as Extract<BackendEvent, { type: 'job.created' }>), integration_id: other, at: 10 },
      { type: 'job.cancelled', job_id: J, integration_id: other, at: 11 },
    ];
    const all = timelines(fold(stored(theirs), new BackendFold()));
    expect([...all.keys()].filter((key) => key.startsWith('job:'))).toEqual([`job:${I}:${J}`, `job:${other}:${J}`]);
    expect(all.get(`job:${I}:${J}`)!.final).toEqual({ state: 'completed', status: 'completed' });
    expect(all.get(`job:${other}:${J}`)!.final).toEqual({ state: 'cancelled', status: 'cancelled' });
  });

  it('names a job event for a job the log never created', () => {
    const orphan: BackendEvent = { type: 'job.started', job_id: 'ghost', integration_id: I, lease_until: 9, at: 3 };
    expect(() => fold(stored([...BACKEND.slice(0, 2), orphan]), new BackendFold())).toThrow(/^event #3 \(job\.started\) cannot be folded/);
  });
});

/** A plugin's log: a job refused, sent again, run and posted; another whose backend had ended it; the first forgotten. */
const P1 = 'p1';
const P2 = 'p2';
const PLUGIN: PluginEvent[] = [
  { type: 'plugin.job_received', job_id: P1, job: { job_id: P1 }, cursor: '1', at: 1 },
  { type: 'plugin.job_refused', job_id: P1, at: 2 },
  { type: 'plugin.job_started', job_id: P1, at: 3 },
  { type: 'plugin.job_received', job_id: P2, job: { job_id: P2 }, cursor: '2', at: 4 },
  { type: 'plugin.job_closed', job_id: P2, reason: 'settled', status: 409, at: 5 },
  { type: 'plugin.job_finished', job_id: P1, outcome: { result: { a: 1 } }, at: 6 },
  { type: 'plugin.job_closed', job_id: P1, reason: 'posted', status: 200, at: 7 },
  { type: 'plugin.jobs_forgotten', job_ids: [P1], dedupe: { [P1]: 99 }, at: 8 },
];

describe('plugin log replay', () => {
  it("moves each of the plugin's jobs to the state its statechart takes, a closed one with why, and says retention forgot it", () => {
    expect(states(fold(stored(PLUGIN), new PluginFold()))).toEqual({
      'plugin-job p1': ['open.received', 'open.refused', 'open.started', 'open.finished', 'closed posted', 'forgotten'],
      'plugin-job p2': ['open.received', 'closed settled'],
    });
  });

  it('names an event of another log, or a job event for a job the log never received', () => {
    expect(() => fold(stored([HOST[0]!]), new PluginFold())).toThrow(/^event #1 \(host\.started\) is not an event of a plugin log/);
    expect(() => fold(stored([PLUGIN[1]!]), new PluginFold())).toThrow(/^event #1 \(plugin\.job_refused\) cannot be folded/);
  });

  it('verifies: two folds agree after every event', () => {
    expect(verify(() => new PluginFold(), stored(PLUGIN))).toEqual({ events: PLUGIN.length });
  });
});

describe('verify', () => {
  it('finds two folds of a log equal after every event', () => {
    expect(verify(() => new HostFold(DEFAULT_SESSION_LIMITS), stored(HOST))).toEqual({ events: HOST.length });
    expect(verify(() => new BackendFold(), stored(BACKEND))).toEqual({ events: BACKEND.length });
  });

  /** Folds of which the second takes each event through `change`: as a fold that reads a clock or a random number would. */
  function drifting(change: (stored: StoredEvent<LogRecord>) => StoredEvent<LogRecord>): () => Fold<unknown> {
    let folds = 0;
    return () => {
      const inner = new HostFold(DEFAULT_SESSION_LIMITS);
      const second = folds++ === 1;
      return { step: (event) => inner.step(second ? change(event) : event), touched: () => inner.touched(), state: () => inner.state() };
    };
  }

  it('names the first event after which the folds move an entity to different states', () => {
    const settledOtherwise = drifting((stored) =>
      stored.position === 5 ? { ...stored, event: { ...stored.event, reply: interrupted('a', 't1') } as LogRecord } : stored,
    );
    expect(verify(settledOtherwise, stored(HOST))).toEqual({
      events: 5,
      difference: { position: 5, type: 'task.settled', what: 'the two folds moved session::a, task:a:t1 to different states' },
    });
  });

  it('names the first event after which the folds hold different states of what it touched, though they end alike', () => {
    const received = (change: object) => (stored: StoredEvent<LogRecord>) =>
      stored.event.type === 'message.received' ? { ...stored, event: { ...stored.event, ...change } as LogRecord } : stored;
    const calledOtherwise = drifting(received({ callback: { ...cb, token: 'other' } }));
    expect(verify(calledOtherwise, stored(HOST))).toEqual({
      events: 10,
      difference: { position: 10, type: 'message.received', what: 'the two folds hold different states of session::b' },
    });
    // The same event read otherwise: its words differ before any state does.
    const heardOtherwise = drifting(received({ text: 'something else' }));
    expect(verify(heardOtherwise, stored(HOST))).toEqual({
      events: 10,
      difference: { position: 10, type: 'message.received', what: 'the two folds read different words in it' },
    });
  });

  it('names the last event when the folds end in different states that no event touched', () => {
    let folds = 0;
    const apart = (): Fold<unknown> => {
      const inner = new HostFold(DEFAULT_SESSION_LIMITS);
      const which = folds++;
      return { step: (event) => inner.step(event), touched: () => inner.touched(), state: () => ({ ...inner.state(), which }) };
    };
    expect(verify(apart, stored(HOST))).toEqual({
      events: HOST.length,
      difference: { position: HOST.length, type: 'session.ended', what: 'the two folds end in different states' },
    });
  });

  it('checks a stored snapshot against the fold at its position, and names one that differs', () => {
    const atThree = new HostFold(DEFAULT_SESSION_LIMITS);
    fold(stored(HOST).slice(0, 3), atThree);
    const expected = JSON.stringify(encodeState(atThree.state()));
    const seen: string[] = [];
    const snapshot = (position: number) => ({
      position,
      differs: (folded: unknown) => {
        seen.push(JSON.stringify(folded));
        return JSON.stringify(folded) === expected ? undefined : 'session a differs';
      },
    });
    expect(verify(() => new HostFold(DEFAULT_SESSION_LIMITS), stored(HOST), [snapshot(3)])).toEqual({ events: HOST.length });
    expect(seen).toEqual([expected]);
    expect(verify(() => new HostFold(DEFAULT_SESSION_LIMITS), stored(HOST), [snapshot(3), snapshot(5)])).toEqual({
      events: 5,
      difference: { position: 5, type: 'task.settled', what: 'the snapshot stored at #5 differs from the fold: session a differs' },
    });
  });
});

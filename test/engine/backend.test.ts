/**
 * The backend engine's core, on a real SQLite log and a simulated clock: integrations and their tokens,
 * jobs created, delivered on the integration's one stream, run, completed or failed once, expired at
 * their deadline, sent again when a lease lapses, and all of it rebuilt by a restart.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { backendSeams } from '../../adapters/backend/seams.js';
import type { ReasoningEngineConfig } from '../../engine/reasoning/config.js';
import { ReasoningEngine } from '../../engine/reasoning/engine.js';
import type { NewIntegration } from '../../engine/reasoning/integrations.js';
import { LocalPubSub, type ChannelNotice, type NoticeHandler, type PubSub } from '../../engine/reasoning/pubsub.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobState } from '../../machines/reasoning/job.js';
import { JobCreateBody, ReasoningJob } from '../../protocol/index.js';
import { CAPABILITY_PROFILE, SHAPED_ENVELOPE, heartbeatOf } from '../support/backend.js';
import { readEvents } from '../support/log.js';
import { EventLog } from '../../storage/event-log.js';
import { StoreUnreachableError } from '../../storage/postgres/connection.js';
import { SimulatedClock } from '../support/clock.js';
import { tempDir } from '../support/host.js';
import { FakeSocket } from '../support/socket.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Started {
  readonly backend: ReasoningEngine;
  readonly clock: SimulatedClock;
  readonly dir: string;
  stop(): Promise<void>;
}

async function start(dir = tempDir(), clock = new SimulatedClock(), pubsub?: PubSub, config: ReasoningEngineConfig = {}): Promise<Started> {
  const log = EventLog.open<BackendEvent>({ path: join(dir, 'backend.db'), streamOf: backendStreamOf });
  const backend = await ReasoningEngine.start(backendSeams(log, { clock, ...(pubsub === undefined ? {} : { pubsub }) }), config);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await backend.close();
    await log.close();
  };
  cleanups.push(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { backend, clock, dir, stop };
}

const liveAnalysis = (over: Partial<JobCreateBody> = {}): JobCreateBody =>
  JobCreateBody.parse({
    job_id: randomUUID(),
    purpose: 'live_analysis',
    payload: { session_id: 's', transcript: [{ speaker: 'a', text: 'hi' }] },
    ...over,
  });
const insights = { insights: [{ text: 'Ask about the budget.', kind: 'question', confidence: 0.8 }] };

/** The job frames a stream carried: [id, envelope]. */
function jobFrames(socket: FakeSocket): Array<[string, ReasoningJob]> {
  return [...socket.written.join('').matchAll(/^id: (\d+)\ndata: (.*)$/gm)].map((m) => [m[1]!, ReasoningJob.parse(JSON.parse(m[2]!))]);
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

/** An integration with its stream open and one job (10 min deadline) sent on it. */
async function streamingJob(backend: ReasoningEngine) {
  const { integration_id } = await integrationOf(backend);
  const socket = new FakeSocket();
  await backend.openStream(integration_id, undefined, () => socket);
  const body = liveAnalysis({ deadline_ms: 600_000 });
  await backend.createJob(integration_id, body);
  await settle();
  return { integration_id, socket, body };
}

async function integrationOf(backend: ReasoningEngine): Promise<NewIntegration> {
  const created = await backend.integrations.create('assistant-relay');
  if ('refused' in created) throw new Error(created.refused.message);
  return created;
}

describe('backend: integrations', () => {
  it('hands out two tokens once, keeps their digests, and knows each by its role', async () => {
    const { backend } = await start();
    const created = await integrationOf(backend);
    expect(created.relay_token).not.toBe(created.client_token);
    expect(backend.integrations.authenticates(created.integration_id, 'relay', created.relay_token)).toBe(true);
    expect(backend.integrations.authenticates(created.integration_id, 'client', created.client_token)).toBe(true);
    expect(backend.integrations.authenticates(created.integration_id, 'relay', created.client_token)).toBe(false);
    expect(backend.integrations.authenticates(randomUUID(), 'relay', created.relay_token)).toBe(false);
  });
});

describe('backend: a job from creation to result', () => {
  it('is delivered on the stream, run, and completed once; the same result again is a duplicate, another a conflict', async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    const socket = new FakeSocket();
    await backend.openStream(integration_id, undefined, () => socket);
    const body = liveAnalysis();
    expect((await backend.createJob(integration_id, body)).outcome).toBe('created');
    await settle();
    const [[id, envelope]] = jobFrames(socket) as [[string, ReasoningJob]];
    expect(id).toBe('1');
    expect(envelope).toMatchObject({
      event_type: 'reasoning_job',
      job_id: body.job_id,
      purpose: 'live_analysis',
      byo: false,
      provider_kind: 'assistant-relay',
    });
    expect((await backend.running(integration_id, body.job_id)).outcome).toBe('running');
    expect((await backend.result(integration_id, body.job_id, { result: insights })).outcome).toBe('completed');
    expect((await backend.result(integration_id, body.job_id, { result: insights })).outcome).toBe('duplicate');
    expect((await backend.result(integration_id, body.job_id, { result: { insights: [] } })).outcome).toBe('conflict');
    expect(jobState((await backend.committedJob(integration_id, body.job_id))!)).toBe('completed');
  });

  it('refuses a result that does not follow response_schema, and keeps the job open for a correct one', async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    const body = liveAnalysis();
    await backend.createJob(integration_id, body);
    const answer = await backend.result(integration_id, body.job_id, { result: { insights: [{ text: '', kind: 'shout' }] } });
    expect(answer).toMatchObject({ outcome: 'invalid', message: expect.stringMatching(/result/) });
    expect(jobState((await backend.committedJob(integration_id, body.job_id))!)).toBe('created');
    expect((await backend.result(integration_id, body.job_id, { result: insights })).outcome).toBe('completed');
  });

  it('a failure report fails the job; a job of another integration is unknown to it', async () => {
    const { backend } = await start();
    const a = await integrationOf(backend);
    const b = await integrationOf(backend);
    const body = liveAnalysis();
    await backend.createJob(a.integration_id, body);
    expect((await backend.result(b.integration_id, body.job_id, { result: insights })).outcome).toBe('unknown');
    expect((await backend.result(a.integration_id, body.job_id, { error: { code: 'reasoner_error', message: 'no model' } })).outcome).toBe(
      'failed',
    );
  });

  it('a job logged before the bounds on schemas, with a schema they refuse: its results are refused, never a failure of the backend', async () => {
    const dir = tempDir();
    const first = await start(dir);
    const { integration_id } = await integrationOf(first.backend);
    await first.stop();
    const job_id = randomUUID();
    const log = EventLog.open<BackendEvent>({ path: join(dir, 'backend.db'), streamOf: backendStreamOf });
    const response_schema = { type: 'object', properties: { a: { type: 'string', pattern: '^(?!admin)' } } };
    await log.append({
      type: 'job.created',
      job_id,
      integration_id,
      purpose: 'live_analysis',
      payload: {},
      byo: false,
      response_schema,
      provider_kind: 'assistant-relay',
      deadline_at: first.clock.now() + 60_000,
      at: first.clock.now(),
    });
    await log.close();
    const { backend } = await start(dir, first.clock);
    expect(await backend.result(integration_id, job_id, { result: { a: 'b' } })).toMatchObject({
      outcome: 'invalid',
      code: 'result_invalid',
      message: expect.stringContaining('RE2 does not run the pattern'),
    });
    expect(jobState((await backend.committedJob(integration_id, job_id))!)).toBe('created');
  });

  it('refuses a response_schema that is not a JSON Schema before logging anything', async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    const body = liveAnalysis({ response_schema: { type: 'no such type' } });
    expect(await backend.createJob(integration_id, body)).toMatchObject({ outcome: 'invalid', job: undefined });
    expect(await backend.committedJob(integration_id, body.job_id)).toBeUndefined();
  });
});

describe('backend: BYO creates (PROTOCOL.md 6.7, 7.13)', () => {
  /** A backend whose log already holds an integration created by a pairing. */
  async function paired() {
    const dir = tempDir();
    const integration_id = randomUUID();
    const log = EventLog.open<BackendEvent>({ path: join(dir, 'backend.db'), streamOf: backendStreamOf });
    await log.append({
      type: 'integration.created',
      integration_id,
      provider_kind: 'assistant-relay',
      relay_token_digest: 'r',
      client_token_digest: 'c',
      pairing: { pairing_id: randomUUID(), client_key: 'ck', assistant_key: 'ak' },
      at: 0,
    });
    await log.close();
    return { ...(await start(dir)), integration_id };
  }
  const sealed = (deadline_at: number | undefined, over: Partial<JobCreateBody> = {}) =>
    liveAnalysis({
      byo: true,
      payload: SHAPED_ENVELOPE,
      ...(deadline_at === undefined ? {} : { deadline_at: new Date(deadline_at).toISOString() }),
      ...over,
    });

  it('a paired integration takes only BYO jobs: a plain create is refused byo_required, nothing logged', async () => {
    const { backend, clock, integration_id } = await paired();
    const plain = liveAnalysis();
    expect(await backend.createJob(integration_id, plain)).toMatchObject({ outcome: 'invalid', code: 'byo_required' });
    expect(await backend.committedJob(integration_id, plain.job_id)).toBeUndefined();
    expect(await backend.createJob(integration_id, sealed(clock.now() + 30_000))).toMatchObject({ outcome: 'created' });
  });

  it("takes the client's deadline_at for a BYO job: required, after the backend's clock, at most 1 h and 60 s past it; the frame carries it as sent", async () => {
    const { backend, clock } = await start();
    const { integration_id } = await integrationOf(backend);
    const now = clock.now();
    for (const deadline of [undefined, now, now - 1, now + 3_660_001]) {
      expect(await backend.createJob(integration_id, sealed(deadline)), String(deadline)).toMatchObject({
        outcome: 'invalid',
        code: 'invalid_deadline',
      });
    }
    const body = sealed(now + 3_660_000);
    expect(await backend.createJob(integration_id, body)).toMatchObject({
      outcome: 'created',
      job: { context: { deadline_at: now + 3_660_000 } },
    });
    const socket = new FakeSocket();
    await backend.openStream(integration_id, undefined, () => socket);
    await settle();
    expect(jobFrames(socket).map(([, job]) => job.deadline_at)).toEqual([body.deadline_at]);
    // A retry of a job that exists is answered as it stands, whatever its deadline says by now.
    clock.increment(3_700_000);
    expect(await backend.createJob(integration_id, body)).toMatchObject({ outcome: 'duplicate' });
  });
});

describe('backend: the capability profile', () => {
  const profile = CAPABILITY_PROFILE;
  const probe = (over: Partial<JobCreateBody> = {}) =>
    JobCreateBody.parse({ job_id: randomUUID(), purpose: 'capability_probe', payload: {}, ...over });

  it("is the latest completed plain probe's, kept across a restart; a BYO probe or a result that is no profile leaves it be", async () => {
    const dir = tempDir();
    const first = await start(dir);
    const { integration_id } = await integrationOf(first.backend);
    const profileOf = async (backend: ReasoningEngine) => (await backend.committedIntegration(integration_id))?.profile;
    expect(await profileOf(first.backend)).toBeUndefined();

    const plain = probe();
    await first.backend.createJob(integration_id, plain);
    await first.backend.result(integration_id, plain.job_id, { result: profile });
    expect(await profileOf(first.backend)).toMatchObject({ job_id: plain.job_id, profile });

    const byo = probe({ byo: true, payload: SHAPED_ENVELOPE, deadline_at: new Date(first.clock.now() + 30_000).toISOString() });
    await first.backend.createJob(integration_id, byo);
    expect(
      (await first.backend.result(integration_id, byo.job_id, { result: { ...SHAPED_ENVELOPE, ciphertext: 'B'.repeat(22) } })).outcome,
    ).toBe('completed');
    const own = probe({ response_schema: { type: 'object' } });
    await first.backend.createJob(integration_id, own);
    expect((await first.backend.result(integration_id, own.job_id, { result: { anything: true } })).outcome).toBe('completed');
    expect(await profileOf(first.backend)).toMatchObject({ job_id: plain.job_id });

    await first.stop();
    const second = await start(dir);
    expect(await profileOf(second.backend)).toMatchObject({ job_id: plain.job_id, profile });
  });
});

describe('backend: the same job_id in two integrations', () => {
  it('is two jobs: each delivered on its own stream, leased, expired and ended on its own', async () => {
    const { backend, clock } = await start();
    const c = await integrationOf(backend);
    const d = await integrationOf(backend);
    const [cSocket, dSocket] = [new FakeSocket(), new FakeSocket()];
    await backend.openStream(c.integration_id, undefined, () => cSocket);
    await backend.openStream(d.integration_id, undefined, () => dSocket);
    const mine = liveAnalysis({ deadline_ms: 600_000 });
    const theirs = { ...mine, deadline_ms: 100_000, payload: { session_id: 'd', transcript: [{ speaker: 'b', text: 'other' }] } };
    expect((await backend.createJob(c.integration_id, mine)).outcome).toBe('created');
    expect((await backend.createJob(d.integration_id, theirs)).outcome).toBe('created');
    await settle();
    expect(jobFrames(cSocket).map(([id, job]) => [id, job.job_id, job.payload])).toEqual([['1', mine.job_id, mine.payload]]);
    expect(jobFrames(dSocket).map(([id, job]) => [id, job.job_id, job.payload])).toEqual([['1', mine.job_id, theirs.payload]]);
    const stateIn = async (integrationId: string) => jobState((await backend.committedJob(integrationId, mine.job_id))!);

    // C's plugin runs its job; D's says nothing: only D's lease lapses, and its job goes out again on D's stream alone.
    clock.increment(60_000);
    expect((await backend.running(c.integration_id, mine.job_id)).outcome).toBe('running');
    clock.increment(30_000);
    await settle();
    await settle();
    expect([jobFrames(cSocket).map(([id]) => id), jobFrames(dSocket).map(([id]) => id)]).toEqual([['1'], ['1', '2']]);
    expect([await stateIn(c.integration_id), await stateIn(d.integration_id)]).toEqual(['running', 'delivered']);

    // D's deadline passes: D's job expires, C's runs on and completes.
    clock.increment(10_000);
    await settle();
    expect([await stateIn(c.integration_id), await stateIn(d.integration_id)]).toEqual(['running', 'expired']);
    expect((await backend.result(d.integration_id, mine.job_id, { result: insights })).outcome).toBe('settled');
    expect((await backend.result(c.integration_id, mine.job_id, { result: insights })).outcome).toBe('completed');
    expect((await backend.cancel(d.integration_id, mine.job_id)).outcome).toBe('settled');
    expect((await backend.committedJob(c.integration_id, mine.job_id))!.context).toMatchObject({
      integration_id: c.integration_id,
      payload: mine.payload,
      result: insights,
    });
    expect((await backend.committedJob(d.integration_id, mine.job_id))!.context).toMatchObject({
      integration_id: d.integration_id,
      payload: theirs.payload,
      result: undefined,
    });
  });

  it("a restart re-arms each one's deadline", async () => {
    const dir = tempDir();
    const first = await start(dir);
    const c = await integrationOf(first.backend);
    const d = await integrationOf(first.backend);
    const body = liveAnalysis({ deadline_ms: 5_000 });
    await first.backend.createJob(c.integration_id, body);
    await first.backend.createJob(d.integration_id, { ...body, deadline_ms: 10_000 });
    await first.stop();
    const clock = new SimulatedClock(first.clock.now() + 7_000);
    const second = await start(dir, clock);
    const stateIn = async (integrationId: string) => jobState((await second.backend.committedJob(integrationId, body.job_id))!);
    clock.increment(0);
    await settle();
    expect([await stateIn(c.integration_id), await stateIn(d.integration_id)]).toEqual(['expired', 'created']);
    clock.increment(3_000);
    await settle();
    expect(await stateIn(d.integration_id)).toBe('expired');
  });
});

describe('backend: time', () => {
  it('expires a job at its deadline, not a millisecond before', async () => {
    const { backend, clock } = await start();
    const { integration_id } = await integrationOf(backend);
    const body = liveAnalysis({ deadline_ms: 5_000 });
    await backend.createJob(integration_id, body);
    clock.increment(4_999);
    await settle();
    expect(jobState((await backend.committedJob(integration_id, body.job_id))!)).toBe('created');
    clock.increment(1);
    await settle();
    expect(jobState((await backend.committedJob(integration_id, body.job_id))!)).toBe('expired');
  });

  it.each([
    ['the default lease, 90 s', {}, 90_000],
    ['a lease set short (PROTOCOL.md 6e.25)', { heartbeatIntervalMs: 1_000, leaseMs: 2_000 }, 2_000],
  ])('sends a job again when its lease lapses with no word from the plugin: %s', async (_name, config, leaseMs) => {
    const { backend, clock } = await start(tempDir(), new SimulatedClock(), undefined, config);
    const { socket, body } = await streamingJob(backend);
    clock.increment(leaseMs - 1);
    await settle();
    expect(jobFrames(socket).map(([id]) => id)).toEqual(['1']);
    clock.increment(1);
    await settle();
    await settle();
    expect(jobFrames(socket).map(([id, job]) => [id, job.job_id])).toEqual([
      ['1', body.job_id],
      ['2', body.job_id],
    ]);
  });

  it('refuses a liveness setting that cannot work before it opens anything (PROTOCOL.md 6e.25)', async () => {
    for (const config of [
      { heartbeatIntervalMs: 1_500 },
      { heartbeatIntervalMs: 601_000, leaseMs: 3_600_000 },
      { missedHeartbeats: 0 },
      { missedHeartbeats: 2.5 },
      { heartbeatIntervalMs: 10_000, leaseMs: 19_999 },
      { leaseMs: 3_600_001 },
    ]) {
      await expect(start(tempDir(), new SimulatedClock(), undefined, config), JSON.stringify(config)).rejects.toThrow(RangeError);
    }
  });

  it('a restart re-arms deadlines from the log: one that passed while it was down fires at once', async () => {
    const dir = tempDir();
    const first = await start(dir);
    const { integration_id } = await integrationOf(first.backend);
    const body = liveAnalysis({ deadline_ms: 5_000 });
    await first.backend.createJob(integration_id, body);
    await first.stop();
    const clock = new SimulatedClock(first.clock.now() + 10_000);
    const second = await start(dir, clock);
    clock.increment(0);
    await settle();
    expect(jobState((await second.backend.committedJob(integration_id, body.job_id))!)).toBe('expired');
  });
});

describe('backend: a restart with jobs out', () => {
  it('re-arms leases from the log: a running job whose plugin went quiet is released after the restart, and sent on the next stream', async () => {
    const dir = tempDir();
    const first = await start(dir);
    const { integration_id } = await integrationOf(first.backend);
    await first.backend.openStream(integration_id, undefined, () => new FakeSocket());
    const body = liveAnalysis({ deadline_ms: 600_000 });
    await first.backend.createJob(integration_id, body);
    await settle();
    await first.backend.running(integration_id, body.job_id);
    await first.stop();
    // Back 60 s later: the lease (90 s from the run) has 30 s left.
    const clock = new SimulatedClock(first.clock.now() + 60_000);
    const second = await start(dir, clock);
    expect(jobState((await second.backend.committedJob(integration_id, body.job_id))!)).toBe('running');
    clock.increment(29_999);
    await settle();
    expect(jobState((await second.backend.committedJob(integration_id, body.job_id))!)).toBe('running');
    clock.increment(1);
    await settle();
    expect(jobState((await second.backend.committedJob(integration_id, body.job_id))!)).toBe('created');
    const socket = new FakeSocket();
    await second.backend.openStream(integration_id, undefined, () => socket);
    await settle();
    expect(jobFrames(socket).map(([id, job]) => [id, job.job_id])).toEqual([['2', body.job_id]]);
  });

  it('cancelling a job that has ended is refused as settled', async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    const body = liveAnalysis();
    await backend.createJob(integration_id, body);
    await backend.result(integration_id, body.job_id, { result: insights });
    expect((await backend.cancel(integration_id, body.job_id)).outcome).toBe('settled');
  });
});

describe('backend: the stream', () => {
  it("revoking an integration ends its open stream, in the reasoning channel's words", async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    const socket = new FakeSocket();
    const actor = await backend.openStream(integration_id, undefined, () => socket);
    await backend.integrations.revoke(integration_id);
    await settle();
    expect([socket.ended, actor !== undefined && 'state' in actor ? actor.state.context.closeReason : actor]).toEqual([true, 'revoked']);
  });

  it('sends a job created before any stream once one opens', async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    const body = liveAnalysis();
    await backend.createJob(integration_id, body);
    const socket = new FakeSocket();
    await backend.openStream(integration_id, undefined, () => socket);
    await settle();
    expect(jobFrames(socket).map(([, job]) => job.job_id)).toEqual([body.job_id]);
  });

  it("an open the store refused (503) does not count against the plugin's opens a minute: it logged and delivered nothing", async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    // The default allows 10 opens a minute; eleven fail while the store is away.
    const away = vi.spyOn(backend.integrations, 'holdStream');
    for (let i = 0; i < 11; i += 1) away.mockRejectedValueOnce(new StoreUnreachableError(new Error('connection refused')));
    for (let i = 0; i < 11; i += 1)
      await expect(backend.openStream(integration_id, undefined, () => new FakeSocket())).rejects.toBeInstanceOf(StoreUnreachableError);
    away.mockRestore();
    const opened = await backend.openStream(integration_id, undefined, () => new FakeSocket());
    expect(opened).not.toHaveProperty('over');
    expect(opened).toBeDefined();
  });

  it('a second stream takes over: the first hears superseded and ends; what it was sent and the plugin did not see is sent again', async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    const first = new FakeSocket();
    await backend.openStream(integration_id, undefined, () => first);
    const seen = liveAnalysis();
    const unseen = liveAnalysis();
    await backend.createJob(integration_id, seen);
    await backend.createJob(integration_id, unseen);
    await settle();
    expect(jobFrames(first).map(([id]) => id)).toEqual(['1', '2']);
    const second = new FakeSocket();
    // The plugin saw frame 1 (its cursor), not frame 2.
    await backend.openStream(integration_id, 1, () => second);
    await settle();
    expect(first.written.join('')).toContain('event: superseded\ndata: {"type":"superseded"}');
    expect(first.ended).toBe(true);
    expect(jobFrames(second).map(([id, job]) => [id, job.job_id])).toEqual([['3', unseen.job_id]]);
  });

  it('logs which node holds the stream when that changes, not at every open: a plugin reconnecting in a loop adds nothing', async () => {
    const { backend, dir, stop } = await start();
    const { integration_id } = await integrationOf(backend);
    const sockets = Array.from({ length: 5 }, () => new FakeSocket());
    for (const socket of sockets) await backend.openStream(integration_id, undefined, () => socket);
    expect(sockets.map((socket) => socket.ended)).toEqual([true, true, true, true, false]);
    const { epoch } = backend;
    await stop();
    expect(readEvents(join(dir, 'backend.db')).filter((event) => event.type === 'integration.stream_held')).toEqual([
      { type: 'integration.stream_held', integration_id, node: epoch, at: expect.any(Number) },
    ]);
  });

  it('a revoked integration opens no stream', async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    await backend.integrations.revoke(integration_id);
    const socket = new FakeSocket();
    expect(await backend.openStream(integration_id, undefined, () => socket)).toBeUndefined();
    expect(socket.written).toEqual([]);
  });
});

describe('backend: heartbeats', () => {
  const beat = heartbeatOf;
  const stateOf = (backend: ReasoningEngine, id: string) => backend.integrations.integration(id)!.value;

  it('an integration is online after one heartbeat, offline after three missed, and online again after one', async () => {
    const { backend, clock } = await start();
    const { integration_id } = await integrationOf(backend);
    expect(stateOf(backend, integration_id)).toEqual({ active: 'unseen' });
    expect(await backend.integrations.heartbeat(integration_id, beat())).toEqual({ ok: true, interval_s: 30, probe_requested: false });
    expect(stateOf(backend, integration_id)).toEqual({ active: 'online' });
    clock.increment(89_999);
    await settle();
    expect(stateOf(backend, integration_id)).toEqual({ active: 'online' });
    clock.increment(1);
    await settle();
    expect(stateOf(backend, integration_id)).toEqual({ active: 'offline' });
    await backend.integrations.heartbeat(integration_id, beat());
    expect(stateOf(backend, integration_id)).toEqual({ active: 'online' });
  });

  it('with a short interval and missed heartbeats set, tells plugins that interval and is offline after interval × missed (PROTOCOL.md 6e.25)', async () => {
    const { backend, clock } = await start(tempDir(), new SimulatedClock(), undefined, { heartbeatIntervalMs: 2_000, missedHeartbeats: 2 });
    const { integration_id } = await integrationOf(backend);
    expect(await backend.integrations.heartbeat(integration_id, beat())).toEqual({ ok: true, interval_s: 2, probe_requested: false });
    clock.increment(3_999);
    await settle();
    expect(stateOf(backend, integration_id)).toEqual({ active: 'online' });
    // A heartbeat within the grace keeps it online for another two intervals from then.
    await backend.integrations.heartbeat(integration_id, beat());
    clock.increment(3_999);
    await settle();
    expect(stateOf(backend, integration_id)).toEqual({ active: 'online' });
    clock.increment(1);
    await settle();
    expect(stateOf(backend, integration_id)).toEqual({ active: 'offline' });
  });

  it("a plugin's last heartbeat (stopped) shows it offline at once, logged within the status interval, and renews nothing", async () => {
    const { backend, clock } = await start();
    const { integration_id } = await integrationOf(backend);
    await backend.integrations.heartbeat(integration_id, beat());
    clock.increment(1_000);
    expect(await backend.integrations.heartbeat(integration_id, beat({ status: 'stopped' }))).toEqual({
      ok: true,
      interval_s: 30,
      probe_requested: false,
    });
    expect(stateOf(backend, integration_id)).toEqual({ active: 'offline' });
    // The deadline the first heartbeat set passes without a second offline; a heartbeat brings it back.
    clock.increment(90_000);
    await settle();
    expect(stateOf(backend, integration_id)).toEqual({ active: 'offline' });
    await backend.integrations.heartbeat(integration_id, beat());
    expect(stateOf(backend, integration_id)).toEqual({ active: 'online' });
  });

  it('a plugin whose versions the provider does not allow is refused, told why, and renews no lease', async () => {
    const { backend } = await start();
    const { integration_id } = await integrationOf(backend);
    const answer = await backend.integrations.heartbeat(integration_id, beat({ schema_versions: { min: 2, max: 3 } }));
    expect(answer).toMatchObject({ refused: { code: 'unsupported_version', message: expect.stringMatching(/schema_versions 2-3/) } });
    expect(backend.integrations.integration(integration_id)!.context.seen?.refused?.code).toBe('unsupported_version');
  });

  it('the jobs a heartbeat names as running keep their lease', async () => {
    const { backend, clock } = await start();
    const { integration_id, socket, body } = await streamingJob(backend);
    await backend.running(integration_id, body.job_id);
    for (let i = 0; i < 5; i += 1) {
      clock.increment(30_000);
      await backend.integrations.heartbeat(integration_id, beat({ running_job_ids: [body.job_id] }));
    }
    await settle();
    // 150 s after it started, far past one lease: still running, never sent again.
    expect([jobState((await backend.committedJob(integration_id, body.job_id))!), jobFrames(socket).length]).toEqual(['running', 1]);
  });

  it('logs what a plugin says of itself only when it is news', async () => {
    const { backend, clock, dir } = await start();
    const { integration_id } = await integrationOf(backend);
    for (let i = 0; i < 3; i += 1) await backend.integrations.heartbeat(integration_id, beat());
    // News sooner than the status interval after the last is refused, and logged once the interval has passed.
    expect(await backend.integrations.heartbeat(integration_id, beat({ status: 'busy' }))).toMatchObject({
      over: 'too_many_status_changes',
      retry_after_s: 30,
    });
    clock.increment(30_000);
    await backend.integrations.heartbeat(integration_id, beat({ status: 'busy' }));
    await backend.close();
    expect(
      readEvents(join(dir, 'backend.db'))
        .filter((e) => e.type === 'integration.seen')
        .map((e) => e.status),
    ).toEqual(['ready', 'busy']);
  });

  it('refuses to create an integration for a provider that is coming soon, or unknown', async () => {
    const { backend } = await start();
    expect(await backend.integrations.create('a2a-bridge')).toMatchObject({ refused: { code: 'provider_coming_soon' } });
    expect(await backend.integrations.create('nobody')).toMatchObject({ refused: { code: 'unknown_provider' } });
  });
});

/** Records what is published, and carries it on a turn later, as a broker between processes would. */
class BrokerLikePubSub implements PubSub {
  readonly published: Array<[string, ChannelNotice]> = [];
  private readonly local = new LocalPubSub();
  publish(topic: string, notice: ChannelNotice): void {
    this.published.push([topic, notice]);
    setImmediate(() => this.local.publish(topic, notice));
  }
  subscribe(topic: string, handler: NoticeHandler): () => void {
    return this.local.subscribe(topic, handler);
  }
}

describe('backend: the JobStore and PubSub seams', () => {
  it('publishes each committed change of a job on assistant_channel:{integration}, in the order committed', async () => {
    const pubsub = new BrokerLikePubSub();
    const { backend } = await start(tempDir(), new SimulatedClock(), pubsub);
    const { integration_id, body } = await streamingJob(backend);
    await backend.running(integration_id, body.job_id);
    await backend.result(integration_id, body.job_id, { result: insights });
    const topic = `assistant_channel:${integration_id}`;
    expect(pubsub.published).toEqual([
      ...(['job.created', 'job.delivered', 'job.started', 'job.completed'] as const).map((type) => [
        topic,
        type === 'job.delivered' ? { job_id: body.job_id, type, seq: 1 } : { job_id: body.job_id, type },
      ]),
    ]);
  });

  it('with notices that arrive late, each job is still delivered once, frames in order, and a follower ends on the settled view', async () => {
    const { backend } = await start(tempDir(), new SimulatedClock(), new BrokerLikePubSub());
    const { integration_id } = await integrationOf(backend);
    const socket = new FakeSocket();
    void backend.openStream(integration_id, undefined, () => socket);
    const bodies = Array.from({ length: 5 }, () => liveAnalysis({ deadline_ms: 600_000 }));
    await Promise.all(bodies.map((body) => backend.createJob(integration_id, body)));
    const follower = new FakeSocket();
    backend.follow(
      (await backend.committedJob(integration_id, bodies[0]!.job_id))!,
      undefined,
      () => follower,
      (job) => JSON.stringify({ state: jobState(job) }),
    );
    for (let i = 0; i < 5; i += 1) await settle();
    expect(jobFrames(socket).map(([id, job]) => [Number(id), job.job_id])).toEqual(bodies.map((body, i) => [i + 1, body.job_id]));
    await backend.running(integration_id, bodies[0]!.job_id);
    await backend.result(integration_id, bodies[0]!.job_id, { result: insights });
    for (let i = 0; i < 5; i += 1) await settle();
    const views = [...follower.written.join('').matchAll(/^id: (\d+)\ndata: (.*)$/gm)].map((m) => [Number(m[1]), JSON.parse(m[2]!).state]);
    // Only the newest view matters: one read late may skip a version, never show one twice or out of order.
    expect(views.at(0)).toEqual([2, 'delivered']);
    expect(views.at(-1)).toEqual([4, 'completed']);
    expect(views.map(([version]) => version)).toEqual([...new Set(views.map(([version]) => version))].sort((a, b) => a - b));
    expect(jobFrames(socket)).toHaveLength(5);
  });

  it('tells a channel that reaches other nodes of the integration each commit touched, and its listeners only of jobs', async () => {
    const announced: string[] = [];
    const pubsub = Object.assign(new BrokerLikePubSub(), { announce: (id: string) => void announced.push(id) });
    const { backend } = await start(tempDir(), new SimulatedClock(), pubsub);
    const { integration_id } = await integrationOf(backend);
    expect(announced).toEqual([integration_id]);
    await backend.createJob(integration_id, liveAnalysis());
    expect(announced).toEqual([integration_id, integration_id]);
    expect(pubsub.published.map(([, notice]) => notice.type)).toEqual(['job.created']);
  });
});

/**
 * The inspector's JSON API on real logs: a running Form A host's and a Form B host's (`inspect: true`), a
 * backend relay's, and a damaged copy; what it refuses (unknown keys and machines, a Host that is not
 * loopback, a missing token on another address), and `/api/live` announcing the log's growth.
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startInspectorServer } from '../../adapters/inspector/server.js';
import { createAssistantHost, createBackendRelay, type BackendRelay } from '../../index.js';
import { InspectorModel } from '../../adapters/inspector/model.js';
import { TOKEN, startHost, tempDir, type TestHost } from '../support/host.js';
import { post, request, script } from '../support/http.js';
import { Receiver, closeReceivers } from '../support/receiver.js';
import { SseConnection } from '../support/sse.js';
import { eventually } from '../support/wait.js';

interface Listed {
  readonly key: string;
  readonly kind: string;
  readonly id: string | number;
  readonly machine: string;
  readonly state: string;
  readonly events: number;
  readonly last_at: number;
  readonly [other: string]: unknown;
}
interface Listing {
  readonly log: string | null;
  readonly end: number;
  readonly fault?: string;
  readonly entities: Listed[];
}
interface Timeline extends Listed {
  readonly entries: Array<{
    position: number;
    at: number;
    type: string;
    state: string;
    status?: string;
    state_text: string;
    says?: string;
  }>;
}

const listing = async (base: string, token?: string) =>
  (await request(`${base}/api/entities`, token === undefined ? {} : { token })).body as Listing;
const timeline = async (base: string, key: string) => (await request(`${base}/api/entities/${encodeURIComponent(key)}`)).body as Timeline;

/** Waits until the inspector lists an entity `found` accepts. */
function listed(base: string, what: string, found: (entity: Listed) => boolean): Promise<Listing> {
  return eventually(
    what,
    () => listing(base),
    (list) => list.entities.some(found),
  );
}

const notFound = { error: { code: 'not_found', message: expect.any(String) } };

describe('on a running Form A host', () => {
  let host: TestHost;
  let inspector: string;
  // Characters a URL path would read otherwise: the key must be percent-encoded, and is.
  const session = 'chat/one?#x';
  const text = script({ typing: 'thinking' }, { message: 'hello' });
  const said = `“${text}”`;

  beforeAll(async () => {
    host = await startHost({ inspect: true });
    inspector = host.host.inspectorUrl!;
    expect((await post(host.url, TOKEN, { session_id: session, task_id: 't1', text })).status).toBe(202);
    await listed(inspector, 't1 settled', (entity) => entity.id === 't1' && entity.state === 'settled');
  });

  afterAll(() => host.cleanup());

  it('is on loopback, on a port of its own', () => {
    expect(inspector).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(inspector).not.toBe(host.url);
  });

  it('lists the session and its task, each with its machine, state, events, last time and first words', async () => {
    const list = await listing(inspector);
    expect(list.log).toBe('host');
    expect(list.fault).toBeUndefined();
    expect(list.entities).toEqual([
      {
        key: `session::${session}`,
        kind: 'session',
        id: session,
        form: 'A',
        machine: 'session',
        state: 'open',
        events: expect.any(Number),
        last_at: expect.any(Number),
        state_text: 'open',
        says: said,
      },
      {
        key: `task:${session}:t1`,
        kind: 'task',
        id: 't1',
        session_id: session,
        machine: 'task',
        state: 'settled',
        status: 'message',
        events: 3,
        last_at: expect.any(Number),
        state_text: 'settled (message)',
        says: said,
      },
    ]);
    expect(list.end).toBeGreaterThanOrEqual(5);
  });

  it("gives an entity's timeline: each entry's position, time, event type, state and words", async () => {
    const task = await timeline(inspector, `task:${session}:t1`);
    expect(task.entries.map(({ type, state_text, says }) => [type, state_text, says])).toEqual([
      ['task.started', 'pending', said],
      ['task.progressed', 'pending', 'typing thinking'],
      ['task.settled', 'settled (message)', '“hello”'],
    ]);
    expect(task.entries.at(-1)).toMatchObject({ status: 'message' });
    const positions = task.entries.map((entry) => entry.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(task.entries.every((entry) => entry.at > 1_600_000_000_000)).toBe(true);
  });

  it('serves each statechart as SVG with a group per state', async () => {
    const svg = await request(`${inspector}/api/statecharts/task.svg`);
    expect([svg.status, svg.headers.get('content-type')]).toEqual([200, 'image/svg+xml; charset=utf-8']);
    expect(svg.text).toContain('data-state="settled"');
  });

  it('answers an unknown key, machine or route with 404 and the error body, never a 5xx', async () => {
    for (const path of [
      '/api/entities/task%3Anobody%3At1',
      '/api/entities/%E2%9C%93',
      '/api/statecharts/nope.svg',
      '/api/statecharts/..%2Ftask.svg',
      '/api/nothing',
    ]) {
      const answer = await request(`${inspector}${path}`);
      expect([path, answer.status, answer.body]).toEqual([path, 404, notFound]);
    }
    const malformed = await request(`${inspector}/api/entities/%E0%A4%A`);
    expect([malformed.status, malformed.body]).toEqual([400, { error: { code: 'invalid_request', message: expect.any(String) } }]);
  });

  it('serves the page, with a policy that lets it reach nothing but its own API', async () => {
    const page = await request(`${inspector}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.text).toContain('<title>assistant-relay inspector</title>');
    expect(page.text).not.toMatch(/(?:src|href)="https?:/);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'; script-src 'sha256-[^']+'; .*connect-src 'self'/);
  });

  it('refuses a Host header that is not loopback (DNS rebinding)', async () => {
    const { port } = new URL(inspector);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const sent = httpRequest(
        { host: '127.0.0.1', port, path: '/api/entities', headers: { host: `rebound.example:${port}` } },
        (response) => {
          let body = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode!, body }));
        },
      );
      sent.on('error', reject).end();
    });
    expect([answer.status, JSON.parse(answer.body)]).toEqual([
      400,
      { error: { code: 'invalid_request', message: expect.stringContaining('loopback') } },
    ]);
  });

  it('/api/live says the end at once, then each new end as the log grows', async () => {
    const live = await SseConnection.open(`${inspector}/api/live`);
    expect([live.status, live.headers['content-type']]).toEqual([200, 'text/event-stream; charset=utf-8']);
    await live.until((c) => c.frames.length >= 1, 5_000, 'the first frame');
    const first = (JSON.parse(live.frames[0]!.data) as { end: number }).end;
    expect(first).toBe((await listing(inspector)).end);
    expect((await post(host.url, TOKEN, { session_id: session, task_id: 't2', text: 'again' })).status).toBe(202);
    await live.until(
      (c) => c.frames.some((frame) => (JSON.parse(frame.data) as { end: number }).end > first),
      5_000,
      'a frame with a later end',
    );
    const ends = live.frames.map((frame) => (JSON.parse(frame.data) as { end: number }).end);
    expect(ends).toEqual([...new Set(ends)].sort((a, b) => a - b));
    live.close();
  });
});

describe('on a running Form B host', () => {
  afterEach(closeReceivers);

  it('lists the conversation (its machine is the conversation) and its callback deliveries', async () => {
    const receiver = await Receiver.start();
    const host = await startHost({ form: 'B', inspect: true });
    try {
      const callback = { url: `${receiver.url}/cb`, token: 'callback-token' };
      expect(
        (await post(host.url, TOKEN, { session_id: 'conv', task_id: randomUUID(), text: script({ message: 'one' }), callback })).status,
      ).toBe(202);
      const list = await listed(
        host.host.inspectorUrl!,
        'the delivery succeeded',
        (entity) => entity.kind === 'delivery' && entity.state === 'succeeded',
      );
      expect(list.entities.find((entity) => entity.kind === 'session')).toMatchObject({
        key: 'session::conv',
        form: 'B',
        machine: 'conversation',
        state: 'open',
      });
      expect(list.entities.find((entity) => entity.kind === 'delivery')).toMatchObject({
        key: 'delivery:conv:1',
        id: 1,
        session_id: 'conv',
        machine: 'delivery',
      });
      const delivery = await timeline(host.host.inspectorUrl!, 'delivery:conv:1');
      expect(delivery.entries.map((entry) => entry.state)).toEqual(['waiting', 'attempting', 'succeeded']);
    } finally {
      await host.cleanup();
    }
  });
});

describe('on a backend relay', () => {
  const dir = tempDir();
  let relay: BackendRelay;
  let base: string;
  let jobId: string;
  let integrationId: string;

  beforeAll(async () => {
    relay = await createBackendRelay({ db: join(dir, 'backend.db'), inspect: true });
    const url = await relay.listen();
    const integration = await relay.backend.integrations.create('assistant-relay');
    if ('refused' in integration) throw new Error(integration.refused.message);
    integrationId = integration.integration_id;
    base = `${url}/api/v1/assistant/integrations/${integration.integration_id}`;
    jobId = randomUUID();
    expect(
      (
        await request(`${base}/jobs`, {
          token: integration.client_token,
          body: { job_id: jobId, purpose: 'capability_probe', payload: {} },
        })
      ).status,
    ).toBe(201);
  });

  afterAll(async () => {
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists the integration and the job with their states, and the job timeline', async () => {
    const list = await listed(relay.inspectorUrl!, 'the job', (entity) => entity.kind === 'job');
    expect(list.log).toBe('backend');
    expect(list.entities.map(({ kind, machine, state }) => [kind, machine, state])).toEqual([
      ['integration', 'integration', 'active.unseen'],
      ['job', 'job', 'open.created'],
    ]);
    const job = await timeline(relay.inspectorUrl!, `job:${integrationId}:${jobId}`);
    // Its state once (`open.created`, never `open.created (created)`), and its purpose as its words.
    expect(job).toMatchObject({
      id: jobId,
      integration_id: integrationId,
      status: 'created',
      state_text: 'open.created',
      says: 'capability_probe',
    });
    expect(job.entries).toEqual([
      expect.objectContaining({ type: 'job.created', state: 'open.created', state_text: 'open.created', says: 'capability_probe' }),
    ]);
  });
});

describe('on an address other than loopback', () => {
  const dir = tempDir();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("asks every API route for the host's token; the page itself holds no data and does not", async () => {
    const host = await createAssistantHost({ db: join(dir, 'relay.db'), token: TOKEN, agent: 'echo', inspect: { host: '0.0.0.0' } });
    try {
      const base = `http://127.0.0.1:${new URL(host.inspectorUrl!).port}`;
      for (const path of ['/api/entities', '/api/entities/x', '/api/statecharts/task.svg', '/api/live']) {
        const refused = await request(`${base}${path}`);
        expect([path, refused.status, refused.body]).toEqual([path, 401, { error: { code: 'unauthorized', message: expect.any(String) } }]);
        expect((await request(`${base}${path}`, { token: 'wrong' })).status).toBe(401);
      }
      expect((await listing(base, TOKEN)).log).toBe('host');
      expect((await request(`${base}/`)).status).toBe(200);
    } finally {
      await host.close();
    }
  });

  it('is refused without a token to ask for, and on a log that is not a file', async () => {
    await expect(createBackendRelay({ db: join(dir, 'backend.db'), inspect: { host: '0.0.0.0' } })).rejects.toThrow(
      /not a loopback address, needs the process's token/,
    );
    await expect(createAssistantHost({ db: ':memory:', token: TOKEN, agent: 'echo', inspect: true })).rejects.toThrow(/not :memory:/);
  });
});

describe('on a damaged log', () => {
  const dir = tempDir();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lists what it folded up to the damaged event, and says where it stopped', async () => {
    const host = await startHost({ dir });
    expect((await post(host.url, TOKEN, { session_id: 's', task_id: 't1', text: 'hello' })).status).toBe(202);
    expect((await post(host.url, TOKEN, { session_id: 's', task_id: 't2', text: 'again' })).status).toBe(202);
    await host.close();
    const db = new Database(host.db);
    const damaged = (
      db.prepare("SELECT position FROM events WHERE type = 'task.started' ORDER BY position DESC LIMIT 1").get() as { position: number }
    ).position;
    db.exec('DROP TRIGGER events_append_only_update');
    db.prepare("UPDATE events SET data = '{' WHERE position = ?").run(damaged);
    db.close();

    const model = await InspectorModel.open(host.db);
    const server = await startInspectorServer(model, { epoch: 'test' });
    try {
      const list = await listing(server.url);
      expect(list.fault).toMatch(new RegExp(`^event #${damaged} \\(task\\.started\\) is not JSON`));
      expect(list.end).toBe(damaged - 1);
      expect(list.entities.map((entity) => entity.key)).toEqual(['session::s', 'task:s:t1']);
    } finally {
      await server.close();
      await model.close();
    }
  });
});

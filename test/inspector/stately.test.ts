/**
 * `statelyInspector`: a host and a backend relay report their entities to an inspector made by
 * `@statelyai/inspect` itself (`createInspector` with an adapter that records what it is sent: no network),
 * each as an actor of its machine, each committed event that moves one as an event and a snapshot.
 */
import { createInspector, type StatelyInspectionEvent } from '@statelyai/inspect';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAssistantHost, createBackendRelay } from '../../index.js';
import { TOKEN, readEvents, tempDir } from '../support/host.js';
import { post, request, script } from '../support/http.js';
import { waitFor } from '../support/wait.js';

function recordingInspector() {
  const sent: StatelyInspectionEvent[] = [];
  return { sent, inspector: createInspector({ send: (event) => sent.push(event) }) };
}

const ofActor = (sent: StatelyInspectionEvent[], sessionId: string) => sent.filter((event) => event.sessionId === sessionId);

describe('statelyInspector', () => {
  const dir = tempDir();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reports a host's sessions and tasks: the actor with its machine, then each event and the snapshot it moved to", async () => {
    const db = join(dir, 'relay.db');
    const earlier = await createAssistantHost({ db, token: TOKEN, agent: 'script' });
    const earlierUrl = await earlier.listen();
    expect((await post(earlierUrl, TOKEN, { session_id: 'before', task_id: 'b1', text: 'hello' })).status).toBe(202);
    await waitFor('b1 settled', () => readEvents(db).some((event) => event.type === 'task.settled'));
    await earlier.close();

    const { sent, inspector } = recordingInspector();
    const host = await createAssistantHost({ db, token: TOKEN, agent: 'script', statelyInspector: inspector });
    try {
      // What the log held already: each entity announced once, at its state now.
      expect(ofActor(sent, 'task:before:b1')).toEqual([
        expect.objectContaining({
          type: '@xstate.actor',
          name: 'task',
          parentId: 'session::before',
          snapshot: { status: 'active', value: 'settled', context: { status: 'message' } },
        }),
      ]);
      const url = await host.listen();
      expect(
        (await post(url, TOKEN, { session_id: 's', task_id: 't1', text: script({ typing: 'thinking' }, { message: 'hi' }) })).status,
      ).toBe(202);
      await waitFor('the task settled, reported', () =>
        ofActor(sent, 'task:s:t1').some(
          (event) =>
            event.type === '@xstate.snapshot' &&
            JSON.stringify(event.snapshot) === JSON.stringify({ status: 'active', value: 'settled', context: { status: 'message' } }),
        ),
      );
      const session = ofActor(sent, 'session::s');
      expect(session[0]).toMatchObject({ type: '@xstate.actor', name: 'session', definition: expect.stringContaining('"id":"session"') });
      const task = ofActor(sent, 'task:s:t1');
      expect(task.map((event) => [event.type, event.type === '@xstate.actor' ? undefined : event.event.type])).toEqual([
        ['@xstate.actor', undefined],
        ['@xstate.event', 'task.started'],
        ['@xstate.snapshot', 'task.started'],
        ['@xstate.event', 'task.progressed'],
        ['@xstate.snapshot', 'task.progressed'],
        ['@xstate.event', 'task.settled'],
        ['@xstate.snapshot', 'task.settled'],
      ]);
      expect(task[0]).toMatchObject({ parentId: 'session::s', rootId: 'session::s' });
      expect(task.at(-1)).toMatchObject({ snapshot: { status: 'active', value: 'settled', context: { status: 'message' } } });
      // Only the type, position and time of an event: its body holds the user's words.
      const started = task[1] as Extract<StatelyInspectionEvent, { type: '@xstate.event' }>;
      expect(started.event).toEqual({ type: 'task.started', position: expect.any(Number), at: expect.any(Number) });
      expect(JSON.stringify(sent)).not.toContain('thinking');
    } finally {
      await host.close();
    }
  });

  it("reports a backend relay's integrations and jobs", async () => {
    const { sent, inspector } = recordingInspector();
    const relay = await createBackendRelay({ db: join(dir, 'backend.db'), statelyInspector: inspector });
    try {
      const url = await relay.listen();
      const integration = await relay.backend.integrations.create('assistant-relay');
      if ('refused' in integration) throw new Error(integration.refused.message);
      const job_id = randomUUID();
      const created = await request(`${url}/api/v1/assistant/integrations/${integration.integration_id}/jobs`, {
        token: integration.client_token,
        body: { job_id, purpose: 'capability_probe', payload: {} },
      });
      expect(created.status).toBe(201);
      await waitFor('the job reported', () => ofActor(sent, `job:${integration.integration_id}:${job_id}`).length === 3);
      expect(ofActor(sent, `integration::${integration.integration_id}`)[0]).toMatchObject({
        type: '@xstate.actor',
        name: 'integration',
        snapshot: { value: { active: 'unseen' } },
      });
      expect(ofActor(sent, `job:${integration.integration_id}:${job_id}`).map((event) => event.type)).toEqual([
        '@xstate.actor',
        '@xstate.event',
        '@xstate.snapshot',
      ]);
      expect(ofActor(sent, `job:${integration.integration_id}:${job_id}`)[2]).toMatchObject({
        snapshot: { value: { open: 'created' }, context: { status: 'created' } },
      });
      // A job's actor is its integration's child: its id is unique within that integration only.
      expect(ofActor(sent, `job:${integration.integration_id}:${job_id}`)[0]).toMatchObject({
        parentId: `integration::${integration.integration_id}`,
      });
    } finally {
      await relay.close();
    }
  });

  it('is refused with a log that is not a file', async () => {
    const { inspector } = recordingInspector();
    await expect(createBackendRelay({ db: ':memory:', statelyInspector: inspector })).rejects.toThrow(/not :memory:/);
  });
});

/**
 * The programs in examples/ run as a user runs them (`npx tsx examples/….ts`, the package imported by its
 * name, so from dist/), each to its own end, with what it needs on loopback; their output is what they say.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BackendClient, JobsClient } from '../../client.js';
import { builtinReasoner } from '../../index.js';
import { killChildren, start, type CliResult } from '../support/child.js';
import { serveBackend } from '../support/backend.js';
import { TOKEN, startHost } from '../support/host.js';
import { request } from '../support/http.js';
import { waitFor } from '../support/wait.js';

afterEach(killChildren);

/** `node --import tsx examples/NAME`: what `npx tsx` runs. */
function startExample(name: string, env: Record<string, string> = {}) {
  return start([], { NODE_OPTIONS: '--import tsx', ...env }, fileURLToPath(new URL(`../../examples/${name}`, import.meta.url)));
}

async function runExample(name: string, env: Record<string, string> = {}): Promise<CliResult> {
  const { output, exited } = startExample(name, env);
  const exit = await exited;
  return { ...exit, ...output };
}

/** A backend on loopback with one integration, as its operator makes one. */
async function backendWithIntegration() {
  const operatorToken = 'examples-operator-token';
  const backend = await serveBackend({ operatorToken });
  const integration = (await request(`${backend.url}/api/v1/admin/integrations`, { token: operatorToken, body: {} })).body as {
    integration_id: string;
    relay_token: string;
    client_token: string;
  };
  return { backend, integration };
}

describe('examples/', () => {
  it('host-with-agent.ts: a host with its own agent answers a client, remembering the session', async () => {
    const result = await runExample('host-with-agent.ts');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^host listening on http:\/\/127\.0\.0\.1:\d+\n/);
    expect(result.stdout).toContain('you: How many words is this?\nagent: 5 words; your earlier messages in this session: 0\n');
    expect(result.stdout).toContain('you: And this one?\nagent: 3 words; your earlier messages in this session: 1\n');
  });

  it('chat-and-job.ts: chats and follows a job to its end, against an assistant it starts itself', async () => {
    const result = await runExample('chat-and-job.ts');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expectChatAndJob(result.stdout);
  });

  it('chat-and-job.ts: the same against a host and a backend named by URL', async () => {
    const { backend, integration: created } = await backendWithIntegration();
    const reasoner = builtinReasoner({ providerKind: 'assistant-relay' });
    const channel = { url: backend.url, integration: created.integration_id, relayToken: created.relay_token, reasoner };
    const host = await startHost({ agent: 'echo', backend: channel });
    try {
      const result = await runExample('chat-and-job.ts', {
        ASSISTANT_URL: host.url,
        ASSISTANT_TOKEN: TOKEN,
        BACKEND_URL: backend.url,
        INTEGRATION_ID: created.integration_id,
        CLIENT_TOKEN: created.client_token,
      });
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expectChatAndJob(result.stdout);
      // The example's session is in this host's log: it talked to the one it was told of.
      expect(host.host.sessionIds()).toEqual([expect.stringMatching(/^example-/)]);
    } finally {
      await host.cleanup();
      await backend.stop();
    }
  });

  it('plugin-with-reasoner.ts: a plugin answers a job with its own reasoner', async () => {
    const result = await runExample('plugin-with-reasoner.ts');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^job [0-9a-f-]{36}: completed\n/);
    const answer = JSON.parse(result.stdout.slice(result.stdout.indexOf('\n') + 1)) as unknown;
    expect(answer).toEqual({
      insights: [
        { text: 'Maya talked money: Our budget for the pilot is 20k.', kind: 'fact', confidence: 0.8 },
        { text: 'Daniel talked money: The price per seat drops after 50 seats.', kind: 'fact', confidence: 0.8 },
      ],
    });
  });

  it('plugin-with-reasoner.ts: serves the integration of a backend named by URL until SIGTERM', async () => {
    const { backend, integration } = await backendWithIntegration();
    try {
      const plugin = startExample('plugin-with-reasoner.ts', {
        BACKEND_URL: backend.url,
        INTEGRATION_ID: integration.integration_id,
        RELAY_TOKEN: integration.relay_token,
        PLUGIN_DB: join(backend.dir, 'plugin.db'),
      });
      await waitFor('the plugin to start', () => plugin.output.stdout.includes('plugin started'));
      const path = `/api/v1/assistant/integrations/${integration.integration_id}`;
      const client = new BackendClient(`${backend.url}${path}`, integration.client_token);
      const jobs = new JobsClient(client, integration.integration_id);
      const transcript = [{ speaker: 'Daniel', text: 'What does the discount come to?' }];
      const created = await jobs.create({ purpose: 'live_analysis', payload: { session_id: 'call-2', transcript }, deadline_ms: 30_000 });
      const ended = await jobs.follow(created);
      const insight = { text: 'Daniel talked money: What does the discount come to?', kind: 'fact', confidence: 0.8 };
      expect(ended.result).toEqual({ insights: [insight] });
      plugin.child.kill('SIGTERM');
      expect(await plugin.exited).toEqual({ code: 0, signal: null });
      expect(plugin.output.stderr).toBe('');
    } finally {
      await backend.stop();
    }
  });
});

function expectChatAndJob(stdout: string): void {
  // The echo agent says back what it was told.
  expect(stdout).toContain('you: Hello!\n');
  expect(stdout).toContain('assistant: Hello!\n');
  expect(stdout).toContain('assistant: Can you hear me?\n');
  expect(stdout).toMatch(/^job [0-9a-f-]{36}: completed$/m);
  // What the builtin reasoner makes of the call is its own tests' business: here, that it said something.
  expect(stdout).toMatch(/^insight \(\w+\): \S/m);
}

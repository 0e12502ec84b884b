/**
 * For the examples that need a backend relay: one of their own on 127.0.0.1 (its event log in a
 * temporary folder) with one integration, so that each example runs by itself. Against a backend you run
 * (`assistant-relay backend`), you have its URL and the integration's tokens instead: from
 * `assistant-relay pair`, or from the operator's `POST /api/v1/admin/integrations`, as below.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBackendRelay } from 'assistant-relay';

export interface LocalBackend {
  readonly url: string;
  readonly integrationId: string;
  /** What the assistant's plugin presents (RELAY_TOKEN). */
  readonly relayToken: string;
  /** What the client presents (CLIENT_TOKEN). */
  readonly clientToken: string;
  /** A temporary folder for the example's own files; `close()` removes it. */
  readonly folder: string;
  close(): Promise<void>;
}

export async function startLocalBackend(): Promise<LocalBackend> {
  const folder = mkdtempSync(join(tmpdir(), 'assistant-relay-example-'));
  const operatorToken = randomBytes(32).toString('base64url');
  const relay = await createBackendRelay({ db: join(folder, 'backend.db'), operatorToken });
  const url = await relay.listen({ port: 0 });
  const response = await fetch(`${url}/api/v1/admin/integrations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json' },
    body: '{}',
  });
  if (!response.ok) throw new Error(`creating an integration: the backend answered ${response.status} ${await response.text()}`);
  const created = (await response.json()) as { integration_id: string; relay_token: string; client_token: string };
  return {
    url,
    integrationId: created.integration_id,
    relayToken: created.relay_token,
    clientToken: created.client_token,
    folder,
    async close() {
      await relay.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

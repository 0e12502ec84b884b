/** Routes an embedder adds to `host.server` keep fastify's JSON Schema validation; ours use zod. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAssistantHost } from '../../index.js';
import { request } from '../support/http.js';
import { TOKEN, tempDir } from '../support/host.js';

describe('an embedder route', () => {
  it('is validated by its JSON Schema and answered with the error body', async () => {
    const dir = tempDir();
    const host = await createAssistantHost({ db: join(dir, 'relay.db'), token: TOKEN, agent: 'echo' });
    try {
      const schema = { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } };
      host.server.post('/mine', { schema }, async (req) => ({ hello: (req.body as { name: string }).name }));
      const url = await host.listen();
      expect((await request(`${url}/mine`, { body: { name: 'ada' } })).body).toEqual({ hello: 'ada' });
      const refused = await request(`${url}/mine`, { body: { nom: 'ada' } });
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ error: { code: 'invalid_request', message: expect.any(String) } });
    } finally {
      await host.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

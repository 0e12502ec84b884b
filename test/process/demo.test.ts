/**
 * `npm start` (`assistant-relay demo`, issue 11): the whole system on one machine as a person starts it,
 * a real child process: it pairs, probes, plays a call with live insights, chats in both forms with an
 * approval step, gets the summary as a BYO job, prints the timeline and exits 0; what it shows comes from
 * the transcript it plays, through the reasoner; `--keep` stays up for other clients until Ctrl-C.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { FormAClient } from '../../client.js';
import { IntegrationView } from '../../protocol/index.js';
import { killChildren, runCli, start, useChildFolder } from '../support/child.js';
import { modesUnder, notPrivate, withOpenUmask } from '../support/modes.js';
import { eventually } from '../support/wait.js';
import { SALES_CALL_INSIGHTS } from '../support/sales-call.js';

const folder = useChildFolder();
afterEach(killChildren);

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** What `who` said on the timeline (a line is `  12.34s  who       what`: 20 columns before the what). */
const said = (stdout: string, who: string) =>
  stdout
    .split('\n')
    .filter((line) => /^\s*\d+\.\d+s  /.test(line) && line.slice(10, 19).trim() === who)
    .map((line) => line.slice(20));

it('runs the whole system, walks a client through it, prints the timeline, and exits 0', { timeout: 90_000 }, async () => {
  const data = join(folder(), 'data');
  // Whatever the umask: everything it writes is private (issue 23, part 7).
  const run = await withOpenUmask(() => runCli(['demo', '--data', data, '--pace', '20ms']));
  expect(run.code, run.stderr).toBe(0);
  const out = run.stdout;

  expect(out).toMatch(/short authentication string (\d{3} \d{3}) on the client, \1 on the assistant: the same/);
  // Each side's person confirmed the strings match before the keys were written.
  for (const [side, other] of [
    ['client', 'assistant'],
    ['assistant', 'client'],
  ]) {
    expect(said(out, 'pairing').join('\n')).toMatch(
      new RegExp(`the ${side} shows (\\d{3} \\d{3}); its person looks at the ${other}'s \\1 and confirms they match`),
    );
  }
  expect(out.indexOf('confirms they match')).toBeLessThan(out.indexOf('paired: integration'));
  expect(out).toMatch(new RegExp(`paired: integration ${UUID}`));
  expect(said(out, 'plugin').join('\n')).toMatch(/online at the backend: .* reasoner builtin/);
  expect(said(out, 'probe').join('\n')).toMatch(/completed: skills live_analysis, session_summary/);
  expect(said(out, 'call').filter((line) => /^\s*(Maya|Daniel): /.test(line))).toHaveLength(26);
  // The insights of the bundled call, in order; who they come from, and how to use a model.
  expect(said(out, 'insight')).toEqual(SALES_CALL_INSIGHTS.map((insight) => `★ ${insight.replace(/^\d+: /, '')}`));
  const lines = said(out, 'call');
  expect(lines).toContain(
    'insights and the summary come from the builtin reasoner: keyword rules on each sentence, no model. For a model:',
  );
  expect(lines).toContain('  npm start -- --reasoner openai --openai-base-url http://127.0.0.1:11434/v1 --openai-model llama3.2');

  expect(said(out, 'chat A')).toEqual([
    'you: Send Daniel the follow-up email with the pricing sheet',
    '  … thinking',
    'assistant: About to: Send Daniel the follow-up email with the pricing sheet. Reply /approve to go ahead or /deny to cancel.',
    'you: /approve',
    '  ⚙ carrying out: Send Daniel the follow-up email with the pricing sheet',
    'assistant: Done: Send Daniel the follow-up email with the pricing sheet.',
  ]);
  const chatB = said(out, 'chat B');
  expect(chatB).toContain('  … thinking (the typing indicator shows)');
  expect(chatB).toContain('assistant: Cancelled: Book a 30-minute check-in with Daniel for next Tuesday.');

  const summary = said(out, 'summary');
  expect(summary.at(-2)).toMatch(/BYO job .*: completed/);
  expect(out).toContain('Summary: Maya and Daniel spoke in 26 turns. Maya asked 9 questions; each was answered.');
  expect(out).toContain('Where to look next:');
  expect(out).toContain(`npx assistant-relay replay --db ${join(data, 'assistant-relay.db')}`);
  expect(out).toContain(`npx assistant-relay inspect --db ${join(data, 'assistant-relay.db')}`);

  for (const file of ['backend.db', 'assistant-relay.db', 'assistant-relay.plugin.db', 'form-b.db', 'demo.log'])
    expect(statSync(join(data, file)).size).toBeGreaterThan(0);

  // It ends what it began: its sessions, and its plugin, which tells the backend (offline at once, not 90 s later).
  const integration = new RegExp(`paired: integration (${UUID})`).exec(out)![1]!;
  expect(said(out, 'stop')).toEqual([
    expect.stringMatching(/^sessions ended: insights:call-\w+ and chat-\w+ on host A, desk-\w+ on host B$/),
  ]);
  expect(said(out, 'backend')).toContain(`integration ${integration}: offline`);
  const finals = async (db: string) =>
    (await runCli(['replay', '--db', join(data, db), '--json'])).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const sessions = [...(await finals('assistant-relay.db')), ...(await finals('form-b.db'))].filter((entry) => entry.kind === 'session');
  expect(new Set(sessions.filter((entry) => entry.event === 'session.ended').map((entry) => entry.id)).size).toBe(3);
  expect((await finals('backend.db')).filter((entry) => entry.kind === 'integration').slice(-2)).toMatchObject([
    { event: 'integration.offline' },
    { final: 'active.offline' },
  ]);

  // demo.log: this run's lines of every part, requests included.
  const logged = readFileSync(join(data, 'demo.log'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { part?: string; component?: string; msg: string });
  expect(new Set(logged.map((line) => [line.part, line.component].filter(Boolean).join('/')))).toEqual(
    new Set(['backend', 'host-a', 'host-a/plugin', 'host-b']),
  );
  expect(logged.filter((line) => line.msg === 'request completed').length).toBeGreaterThan(26);
  expect(modesUnder(data).map(([path]) => path)).toEqual(
    expect.arrayContaining(['.', 'backend.db', 'backend.db.lock', 'demo.log', 'client-keys.json', 'assistant-keys.json', 'token']),
  );
  expect(notPrivate(data)).toEqual([]);
});

it('shows insights and a summary drawn from the transcript it plays, and a second run pairs afresh', { timeout: 90_000 }, async () => {
  const dir = folder();
  const transcript = join(dir, 'call.txt');
  writeFileSync(
    transcript,
    [
      'Zed: We are worried the Quokka migration is delayed again.',
      'Ada: I will send the Quokka rollback plan by Monday.',
      'Zed: We agreed to go with the Quokka pilot.',
    ].join('\n'),
  );
  const args = ['demo', '--data', join(dir, 'data'), '--transcript', transcript, '--pace', '20ms'];
  const first = await runCli(args);
  expect(first.code, first.stderr).toBe(0);
  expect(said(first.stdout, 'insight').join('\n')).toContain('Quokka migration is delayed again');
  expect(first.stdout).toContain('Summary: Zed and Ada spoke in 3 turns.');
  expect(first.stdout).toContain('- I will send the Quokka rollback plan by Monday. (Ada)');
  expect(first.stdout).toContain('✓ We agreed to go with the Quokka pilot.');
  expect(first.stdout).not.toContain('Maya');

  const integration = new RegExp(`paired: integration (${UUID})`).exec(first.stdout)![1];
  const second = await runCli(args);
  expect(second.code, second.stderr).toBe(0);
  expect(second.stdout).toContain(`the integration of the run before, ${integration}, is revoked`);
  expect(new RegExp(`paired: integration (${UUID})`).exec(second.stdout)![1]).not.toBe(integration);
  // The log holds the second run's lines only: one start of each server.
  const started = readFileSync(join(dir, 'data', 'demo.log'), 'utf8')
    .split('\n')
    .filter((line) => line.includes('Server listening'));
  expect(started).toHaveLength(3);
});

it('with --keep stays up for other clients, and stops cleanly on Ctrl-C', { timeout: 90_000 }, async () => {
  const dir = folder();
  const transcript = join(dir, 'call.txt');
  writeFileSync(transcript, 'Zed: A short call.\n');
  const data = join(dir, 'data');
  const running = start(['demo', '--keep', '--data', data, '--transcript', transcript, '--pace', '10ms'], {});
  const out = await eventually(
    'the demo to say it keeps running',
    () => running.output.stdout,
    (text) => text.includes('Ctrl-C stops it'),
    { timeoutMs: 60_000 },
  );
  const [, url, tokenFile] = /assistant-relay chat --url (\S+) --token-file (\S+)/.exec(out)!;

  // Another client, on the host the demo left running: an approval step of its own.
  const client = new FormAClient({ url: url!, token: readFileSync(tokenFile!, 'utf8').trim() });
  const asked = await client.send('kept', 'Order lunch for the team').reply;
  expect(asked).toMatchObject({
    status: 'message',
    reply_text: 'About to: Order lunch for the team. Reply /approve to go ahead or /deny to cancel.',
  });
  expect(await client.send('kept', '/approve').reply).toMatchObject({ status: 'message', reply_text: 'Done: Order lunch for the team.' });
  client.close();

  // The Form A host's inspector is up too, and already knows the session this client just used.
  const inspector = /(http:\/\/127\.0\.0\.1:\d+) {2}the inspector/.exec(out)![1]!;
  await eventually(
    'the inspector to list the session',
    async () => (await (await fetch(`${inspector}/api/entities`)).json()) as { entities: Array<{ kind: string; id: string }> },
    ({ entities }) => entities.some((entity) => entity.kind === 'session' && entity.id === 'kept'),
  );

  const integrations = await runCli(['integrations', '--keys', join(data, 'client-keys.json')]);
  expect(integrations.code, integrations.stderr).toBe(0);
  // Paired, so its probe was sealed: the backend could not read the profile, and shows none (PROTOCOL.md 7.13).
  const listed = IntegrationView.array().parse(JSON.parse(integrations.stdout))[0]!;
  expect(listed).toMatchObject({ state: 'online' });
  expect(listed).not.toHaveProperty('capability_profile');

  running.child.kill('SIGINT');
  expect(await running.exited).toEqual({ code: 0, signal: null });
  // What it began ends at Ctrl-C; what another client began is that client's.
  expect(running.output.stdout).toMatch(/sessions ended: insights:call-\w+ and chat-\w+ on host A/);
});

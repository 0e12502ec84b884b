/**
 * BYO jobs through the plugin, over loopback against the fake backend, with keys from an honest pairing:
 * the reasoner reads the plaintext, the backend and the plugin's log only ever see envelopes.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinReasoner } from '../../adapters/reasoners/builtin.js';
import { ReasonerError } from '../../adapters/reasoners/reasoner.js';
import { JOB_ERRORS, LiveAnalysisResult, jsonSchemaOf, keyringOf, type ByoEnvelope } from '../../protocol/index.js';
import { resultProblems } from '../../protocol/response-schema.js';
import { byoJob, openResult, pair } from './byo-fixture.js';
import { makeJob } from './fake-backend.js';
import { answering, capturingLogger, closed, hanging, throwing, usePlugins } from './fixture.js';

const fixture = usePlugins();

const SENTINEL = 'SENTINEL-7c1e-plaintext';
const transcript = [{ speaker: 'Ana', text: `There is a risk: ${SENTINEL}` }];

describe('a BYO job', () => {
  it("is opened for the reasoner, and its result goes back sealed with the client's binding, following its schema", async () => {
    const keys = pair();
    const reasoner = answering();
    const { backend } = await fixture.open({ reasoner, keys: keyringOf([keys.assistant]) });
    const payload = { session_id: 's1', transcript };
    const job = byoJob(keys.client, payload);
    backend.send(job);
    await backend.until(() => backend.results.length === 1, 'the result');
    expect(reasoner.calls[0]!.payload).toEqual(payload);
    const body = backend.results[0]!.body;
    expect(Object.keys(body)).toEqual(['result']);
    expect((body.result as ByoEnvelope).kid).toBe(keys.client.kid);
    const result = openResult(keys.client, job, body);
    expect(result).toEqual({ insights: [{ text: 'said hello', kind: 'fact', confidence: 1 }] });
    expect(resultProblems(jsonSchemaOf(LiveAnalysisResult), result)).toBeUndefined();
  });

  it("leaves no plaintext in the plugin's log file, its log lines, or anything the backend is sent", async () => {
    const keys = pair();
    const { logger, lines } = capturingLogger();
    const { plugin, backend } = await fixture.open({
      reasoner: builtinReasoner({ providerKind: 'test-provider' }),
      keys: keyringOf([keys.assistant]),
      logger,
    });
    const job = byoJob(keys.client, { session_id: 's1', transcript });
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    // The builtin quotes the risky line: the sentinel is in the result too.
    expect(JSON.stringify(openResult(keys.client, job, backend.results[0]!.body))).toContain(SENTINEL);

    const db = join(fixture.dir(), 'plugin.db');
    const files = () => [db, `${db}-wal`].filter(existsSync).map((file) => readFileSync(file).toString('latin1'));
    const sent = () => JSON.stringify([backend.results, backend.heartbeats, backend.running]);
    expect(files().length).toBeGreaterThan(0);
    for (const text of [...files(), sent(), JSON.stringify(lines)]) expect(text).not.toContain(SENTINEL);
    await plugin.stop();
    for (const text of files()) expect(text).not.toContain(SENTINEL);
  });

  it('is opened under the keys its envelope names, and its result sealed under the same kid (a rotation in flight)', async () => {
    const [older, newer] = [pair(), pair()];
    let keyring = keyringOf([older.assistant]);
    const { backend } = await fixture.open({ reasoner: answering(), keys: () => keyring });
    keyring = keyringOf([newer.assistant, older.assistant]);
    const [before, after] = [byoJob(older.client, { session_id: 's', transcript }), byoJob(newer.client, { session_id: 's', transcript })];
    backend.send(before);
    backend.send(after);
    await backend.until(() => backend.results.length === 2, 'both results');
    const [first, second] = [backend.resultsOf(before.job_id as string)[0]!, backend.resultsOf(after.job_id as string)[0]!];
    expect([(first.result as ByoEnvelope).kid, (second.result as ByoEnvelope).kid]).toEqual([older.client.kid, newer.client.kid]);
    expect(openResult(older.client, before, first)).toHaveProperty('insights');
    expect(openResult(newer.client, after, second)).toHaveProperty('insights');
  });

  const keys = pair();
  const stranger = pair();
  const undone: Array<[string, () => Record<string, unknown>]> = [
    [
      'a tampered envelope',
      () => {
        const job = byoJob(keys.client, { session_id: 's', transcript });
        const envelope = job.payload as ByoEnvelope;
        const i = 10;
        const flipped = envelope.ciphertext[i] === 'A' ? 'B' : 'A';
        return {
          ...job,
          payload: { ...envelope, ciphertext: envelope.ciphertext.slice(0, i) + flipped + envelope.ciphertext.slice(i + 1) },
        };
      },
    ],
    [
      'an envelope moved from another job',
      () => ({ ...makeJob(Date.now(), { byo: true }), payload: byoJob(keys.client, { session_id: 's', transcript }).payload }),
    ],
    ["an envelope under another pairing's keys", () => byoJob(stranger.client, { session_id: 's', transcript })],
    ['an envelope that holds no JSON object', () => byoJob(keys.client, [SENTINEL])],
  ];
  it.each(undone)("%s: failed envelope_invalid with the catalogue's words, never run, never retried", async (_what, make) => {
    const reasoner = answering();
    const { plugin, backend } = await fixture.open({ reasoner, keys: keyringOf([keys.assistant]) });
    const job = make();
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    backend.send(job);
    await backend.until(() => backend.results.length === 2, 'the same failure again, from the record');
    expect(backend.results.map((r) => r.body)).toEqual(
      Array(2).fill({ error: { code: 'envelope_invalid', message: JOB_ERRORS.envelope_invalid } }),
    );
    expect(reasoner.calls).toHaveLength(0);
    expect(backend.running).toHaveLength(0);
  });

  it.each([
    [
      "a ReasonerError: its code, reasoner_error's words",
      throwing(new ReasonerError('model_unavailable', `no model for ${SENTINEL}`)),
      'model_unavailable',
      JOB_ERRORS.reasoner_error,
    ],
    ['any other throw: reasoner_error', throwing(new TypeError(`cannot read ${SENTINEL}`)), 'reasoner_error', JOB_ERRORS.reasoner_error],
    ['a result off its schema: invalid_result', answering(), 'invalid_result', JOB_ERRORS.invalid_result],
  ])('whose reasoner fails (%s) reports the code with the standard message only', async (_what, reasoner, code, message) => {
    const keys = pair();
    const { plugin, backend } = await fixture.open({ reasoner, keys: keyringOf([keys.assistant]) });
    const job = byoJob(keys.client, {
      session_id: 's',
      transcript,
      answer: { insights: [{ text: SENTINEL, kind: 'rumour', confidence: 2 }] },
    });
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    expect(backend.results.map((r) => r.body)).toEqual([{ error: { code, message } }]);
    await plugin.stop();
    expect(readFileSync(join(fixture.dir(), 'plugin.db')).toString('latin1')).not.toContain(SENTINEL);
  });
});

describe('a BYO job across a restart', () => {
  it('finished but not yet posted: the next start posts the identical envelope, without running it again', async () => {
    const keys = pair();
    const keyring = keyringOf([keys.assistant]);
    const { plugin: first, backend } = await fixture.open({ reasoner: answering(), keys: keyring });
    const job = byoJob(keys.client, { session_id: 's', transcript }, 60_000);
    // Answered "come back in 30 s": the plugin is stopped while it waits.
    backend.resultAnswers.set(job.job_id as string, [{ status: 503, retryAfter: 30 }]);
    backend.send(job);
    await backend.until(() => backend.results.length === 1, 'the first POST');
    await first.stop();
    expect(first.status().jobs[job.job_id as string]).toBe('finished');
    const reasoner = answering();
    const second = await fixture.start({ reasoner, keys: keyring });
    await backend.until(closed(second, job), 'the job closed');
    const posted = backend.resultsOf(job.job_id as string);
    expect(posted).toHaveLength(2);
    expect(posted[1]).toEqual(posted[0]);
    expect(reasoner.calls).toHaveLength(0);
    expect(openResult(keys.client, job, posted[1]!)).toHaveProperty('insights');
  });

  it('cut off mid-run: the next start opens its payload again and runs it', async () => {
    const keys = pair();
    const keyring = () => keyringOf([keys.assistant]);
    const { plugin: first, backend } = await fixture.open({ reasoner: hanging(), keys: keyring });
    const payload = { session_id: 's', transcript };
    const job = byoJob(keys.client, payload, 60_000);
    backend.send(job);
    await backend.until(() => first.status().jobs[job.job_id as string] === 'started', 'the run');
    await first.stop();
    const reasoner = answering();
    const second = await fixture.start({ reasoner, keys: keyring });
    await backend.until(closed(second, job), 'the job closed');
    expect(reasoner.calls.map((c) => c.payload)).toEqual([payload]);
    expect(openResult(keys.client, job, backend.resultsOf(job.job_id as string)[0]!)).toHaveProperty('insights');
  });
});

/**
 * The client library's confirmation step (issue 23 part 5) against a real backend over loopback: each
 * side hands its person the short authentication string and waits. Nothing that completes the pairing
 * is sent before the person's yes; a no aborts the pairing, the other side hears why and its own question
 * is withdrawn; no keys, no token, no integration come of it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PairingFailed, pairAsAssistant, pairAsClient, type ConfirmSas } from '../../client.js';
import { serveBackend, type ServedBackend } from '../support/backend.js';
import { readEvents } from '../support/log.js';
import { eventually } from '../support/wait.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** A person the test answers for: `asked` resolves with the string shown and the question's signal. */
function person() {
  let ask!: (question: { sas: string; signal: AbortSignal }) => void;
  let answer!: (same: boolean) => void;
  const asked = new Promise<{ sas: string; signal: AbortSignal }>((resolve) => (ask = resolve));
  const answered = new Promise<boolean>((resolve) => (answer = resolve));
  const confirmSas: ConfirmSas = (sas, signal) => {
    ask({ sas, signal });
    return answered;
  };
  return { confirmSas, asked, answer };
}

/** Both sides of one pairing, each with its person; the assistant's side gets the code the client shows. */
async function pairing() {
  const served: ServedBackend = await serveBackend();
  stops.push(() => served.stop());
  const people = { client: person(), assistant: person() };
  let handOver!: (code: string) => void;
  const code = new Promise<string>((resolve) => (handOver = resolve));
  const client = pairAsClient({
    backend: served.url,
    providerKind: 'assistant-relay',
    pollMs: 20,
    onCode: handOver,
    confirmSas: people.client.confirmSas,
  });
  const assistant = code.then((given) =>
    pairAsAssistant({ backend: served.url, code: given, pollMs: 20, confirmSas: people.assistant.confirmSas }),
  );
  // Settled either way, so that a test that expects a failure does not leave an unhandled one.
  const outcomes = Promise.allSettled([client, assistant]);
  /** The pairing as the backend has committed it (the one it has started). */
  const view = async () => {
    const started = readEvents(served.db).find((event) => event.type === 'pairing.started')!;
    return (await served.backend.pairings.committedPairing(started.pairing_id as string))!;
  };
  return { served, people, client, assistant, outcomes, view };
}

describe('client library, pairing: the person confirms the short authentication string', () => {
  it('waits for both people: no confirmation goes out before a yes, and both keep the same keys after', async () => {
    const { people, client, assistant, view } = await pairing();
    const [fromClient, fromAssistant] = await Promise.all([people.client.asked, people.assistant.asked]);
    expect(fromClient.sas).toMatch(/^\d{3} \d{3}$/);
    expect(fromClient.sas).toBe(fromAssistant.sas);
    // Asked, not answered: the client has not confirmed its keys, so the backend issued it no token.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await view()).context.client_confirmation).toBeUndefined();
    people.client.answer(true);
    await eventually('the client confirmed', view, (pairing) => pairing.context.client_confirmation !== undefined);
    // The assistant's person has not said yes yet: no integration.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await view()).context.integration_id).toBeUndefined();
    people.assistant.answer(true);
    const [c, a] = await Promise.all([client, assistant]);
    expect(c.keys).toEqual(a.keys);
    expect(c.integration_id).toBe(a.integration_id);
    expect([fromClient.signal.aborted, fromAssistant.signal.aborted]).toEqual([true, true]);
  });

  it("a no at the assistant's side aborts the pairing after the client said yes: the client keeps nothing", async () => {
    const { served, people, outcomes } = await pairing();
    await Promise.all([people.client.asked, people.assistant.asked]);
    people.client.answer(true);
    people.assistant.answer(false);
    const [client, assistant] = await outcomes;
    expect(assistant).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ code: 'sas_rejected' }) });
    expect(client).toMatchObject({
      status: 'rejected',
      reason: expect.objectContaining({
        code: 'pairing_aborted',
        message: expect.stringMatching(/assistant's side aborted the pairing: sas_rejected/),
      }),
    });
    expect((client as PromiseRejectedResult).reason).toBeInstanceOf(PairingFailed);
    expect(await served.backend.committedIntegrations()).toEqual([]);
  });

  it("a no at the client's side aborts before it confirms anything, and withdraws the assistant's question", async () => {
    const { served, people, outcomes, view } = await pairing();
    const [, fromAssistant] = await Promise.all([people.client.asked, people.assistant.asked]);
    people.client.answer(false);
    const [client, assistant] = await outcomes;
    expect(client).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ code: 'sas_rejected' }) });
    expect(assistant).toMatchObject({
      status: 'rejected',
      reason: expect.objectContaining({
        code: 'pairing_aborted',
        message: expect.stringMatching(/client's side aborted the pairing: sas_rejected/),
      }),
    });
    expect(fromAssistant.signal.aborted).toBe(true);
    const ended = await view();
    expect([ended.context.client_confirmation, ended.context.aborted?.by]).toEqual([undefined, 'client']);
    expect(await served.backend.committedIntegrations()).toEqual([]);
  });
});

/**
 * The demo's pairing (PROTOCOL.md 7): a client and an assistant paired through the backend, as two people
 * would pair them with the code carried from one screen to the other, each confirming that the short
 * authentication strings match; then both keys files are written and the integration of the run before is revoked.
 */
import { existsSync } from 'node:fs';
import type { BackendRelay } from '../backend/relay.js';
import { ClientKeysFile, readKeysFile, storedKeys, writeKeysFile, type AssistantKeysFile } from '../../storage/keys-file.js';
import { pairAsAssistant, pairAsClient, type ConfirmSas } from '../client/pairing.js';
import type { DemoTimeline } from './timeline.js';

/** The pairing sides read each other often: both are in this process, and a person is watching. */
const PAIRING_POLL_MS = 50;

export interface PairingFiles {
  readonly clientKeys: string;
  readonly assistantKeys: string;
}

/** Pairs a client and an assistant for `providerKind`, and writes both keys files. */
export async function pair(
  backend: string,
  relay: BackendRelay,
  providerKind: string,
  files: PairingFiles,
  t: DemoTimeline,
): Promise<{ client: ClientKeysFile; assistant: AssistantKeysFile }> {
  let handOver!: (code: string) => void;
  const code = new Promise<string>((resolve) => (handOver = resolve));
  const shows: Record<'client' | 'assistant', (sas: string) => void> = { client: () => undefined, assistant: () => undefined };
  const shown = {
    client: new Promise<string>((resolve) => (shows.client = resolve)),
    assistant: new Promise<string>((resolve) => (shows.assistant = resolve)),
  };
  // Each side's person, played here: they look at the other screen, and confirm only if it shows the same string.
  const person =
    (side: 'client' | 'assistant', other: 'client' | 'assistant'): ConfirmSas =>
    async (sas) => {
      shows[side](sas);
      const theirs = await shown[other];
      t.say(
        'pairing',
        `the ${side} shows ${sas}; its person looks at the ${other}'s ${theirs} and ${theirs === sas ? 'confirms they match' : 'says no: they differ'}`,
      );
      return theirs === sas;
    };
  const clientSide = pairAsClient({
    backend,
    providerKind,
    pollMs: PAIRING_POLL_MS,
    onCode: (given) => {
      t.say('pairing', `the client shows the pairing code ${given}; it is given to the assistant's side`);
      handOver(given);
    },
    confirmSas: person('client', 'assistant'),
  });
  const assistantSide = code.then((given) =>
    pairAsAssistant({ backend, code: given, pollMs: PAIRING_POLL_MS, confirmSas: person('assistant', 'client') }),
  );
  const [client, assistant] = await t.step('pairing', 'both sides to confirm', Promise.all([clientSide, assistantSide]));
  // Both people said yes, so the strings are the same: a pairing whose strings differ never gets here.
  t.say(
    'pairing',
    `short authentication string ${client.sas} on the client, ${assistant.sas} on the assistant: the same, so no one is in the middle`,
  );

  const earlier = earlierPairing(files.clientKeys);
  const now = Date.now();
  const common = { version: 1 as const, backend, integration_id: client.integration_id, provider_kind: client.provider_kind };
  const written = {
    client: { kind: 'assistant-relay/client-keys' as const, ...common, client_token: client.token, keys: [storedKeys(client.keys, now)] },
    assistant: {
      kind: 'assistant-relay/assistant-keys' as const,
      ...common,
      relay_token: assistant.token,
      keys: [storedKeys(assistant.keys, now)],
    },
  };
  writeKeysFile(files.clientKeys, written.client);
  writeKeysFile(files.assistantKeys, written.assistant);
  t.say(
    'pairing',
    `paired: integration ${client.integration_id}; keys in ${files.clientKeys} (client) and ${files.assistantKeys} (assistant), mode 0600`,
  );
  if (earlier !== undefined && (await relay.backend.integrations.revoke(earlier)) !== undefined) {
    t.say('pairing', `the integration of the run before, ${earlier}, is revoked`);
  }
  return written;
}

/** The integration a keys file left by an earlier run names, if there is a readable one. */
function earlierPairing(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return readKeysFile(file, ClientKeysFile).integration_id;
  } catch {
    return undefined;
  }
}

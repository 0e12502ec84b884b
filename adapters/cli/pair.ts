/**
 * `assistant-relay pair`: the client's side of a pairing (PROTOCOL.md 7) from a terminal. It starts a
 * pairing at the backend and shows the pairing code (and the same as a QR code) for a person to carry to
 * the assistant's side (`assistant-relay plugin … --pairing-code CODE --keys FILE`); then it shows the
 * short authentication string and asks the person whether the assistant's side shows the same
 * (sas-prompt.ts), and only on a yes, once both sides have confirmed, writes the client's keys file
 * (mode 0600). stdout: `{"pairing_code":…}` at once, then
 * `{"paired":true,…}`; stderr: the same for a person, with the QR code.
 */
import QRCode from 'qrcode';
import { pairAsClient } from '../client/pairing.js';
import { storedKeys, writeKeysFile } from '../../storage/keys-file.js';
import { runClientCommand } from './client.js';
import { baseUrlFlag, readFlags, requiredFlag } from './flags.js';
import { YES_USAGE, sasConfirmation } from './sas-prompt.js';

export const PAIR_USAGE = `usage: assistant-relay pair --backend URL --keys FILE [--provider KIND] [--ticket T] [--yes]
  --backend URL            the backend relay's base URL
  --keys FILE              where the client's keys and token are written (mode 0600; replaced if it exists)
  --provider KIND          the provider of the assistant (default assistant-relay)
  --ticket T               the pairing ticket the backend's operator gave you (a backend with --pairing ticket)
${YES_USAGE}
Shows a pairing code to give to the assistant's side, then a short string both sides must show alike:
it asks you whether they do, and writes the keys only on a yes.
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_BACKEND=http://127.0.0.1:8788.`;

const FLAGS = {
  backend: { type: 'string' },
  keys: { type: 'string' },
  provider: { type: 'string' },
  ticket: { type: 'string' },
  yes: { type: 'boolean' },
} as const;

export function pairCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand('pair', async () => {
    const flags = readFlags(argv, FLAGS, env);
    const backend = baseUrlFlag('backend', requiredFlag(flags, 'backend'));
    const keysFile = requiredFlag(flags, 'keys');
    const confirmSas = sasConfirmation(flags('yes') === true, "the assistant's side");
    const ticket = flags('ticket');
    const say = (line: string) => process.stderr.write(`${line}\n`);
    const paired = await pairAsClient({
      backend,
      providerKind: flags('provider') ?? 'assistant-relay',
      ...(ticket === undefined ? {} : { ticket }),
      onCode: (code) => {
        process.stdout.write(`${JSON.stringify({ pairing_code: code })}\n`);
        void QRCode.toString(code, { type: 'terminal', small: true }).then((qr) => {
          say(`Pairing code: ${code}\n${qr}`);
          say(`On the assistant's side: assistant-relay plugin --backend ${backend} --pairing-code ${code} --keys FILE`);
        });
      },
      confirmSas,
    });
    writeKeysFile(keysFile, {
      kind: 'assistant-relay/client-keys',
      version: 1,
      backend,
      integration_id: paired.integration_id,
      provider_kind: paired.provider_kind,
      client_token: paired.token,
      keys: [storedKeys(paired.keys, Date.now())],
    });
    say(`Paired: integration ${paired.integration_id}; keys in ${keysFile}`);
    process.stdout.write(
      `${JSON.stringify({ paired: true, integration_id: paired.integration_id, provider_kind: paired.provider_kind, sas: paired.sas, keys: keysFile })}\n`,
    );
  });
}

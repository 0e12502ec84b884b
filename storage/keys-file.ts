/**
 * Where each side of a pairing keeps what it ends with (5, PROTOCOL.md 7): the backend, the integration,
 * its own token and the pairing's keys, newest first, in one JSON file only its owner may read. A file
 * others can read is refused, never used; a file is replaced whole (written beside, then renamed), so a
 * crash leaves the old keys or the new ones, never half of each.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import {
  answerRekey,
  fromBase64Url,
  keyringOf,
  toBase64Url,
  type Keyring,
  type RekeyAnswer,
  type RekeyRequest,
  type SessionKeys,
} from '../protocol/index.js';
import { createPrivateFile, exposure, makePrivateFolder } from './private-files.js';

const Key32 = z.string().refine((text) => fromBase64Url(text, { bytes: 32 }) !== undefined, 'a 32-byte key in base64url');

const StoredKeys = z.object({
  kid: z.string().regex(/^[A-Za-z0-9_-]{12}$/),
  client_to_assistant: Key32,
  assistant_to_client: Key32,
  confirm: Key32,
  /** Epoch ms. */
  created_at: z.number().int(),
  /** The assistant's: the rotation that made these keys and how it answered, to answer it again alike. */
  rekey: z.object({ rekey_id: z.uuid(), assistant_key: Key32, mac: Key32 }).optional(),
});

/** Key sets a side keeps: the newest seals; the two before it still open envelopes in flight across rotations. */
export const KEPT_KEY_SETS = 3;

const common = {
  version: z.literal(1),
  backend: z.url(),
  integration_id: z.uuid(),
  provider_kind: z.string(),
  keys: z.array(StoredKeys).min(1),
};

/** The client's file: with its client token, it creates jobs and reads their results. */
export const ClientKeysFile = z.object({ kind: z.literal('assistant-relay/client-keys'), ...common, client_token: z.string().min(1) });
export type ClientKeysFile = z.infer<typeof ClientKeysFile>;

/** The assistant's file: with its RELAY_TOKEN, the plugin takes jobs. */
export const AssistantKeysFile = z.object({ kind: z.literal('assistant-relay/assistant-keys'), ...common, relay_token: z.string().min(1) });
export type AssistantKeysFile = z.infer<typeof AssistantKeysFile>;

/** Why a keys file cannot be used. */
export class KeysFileError extends Error {}

export function storedKeys(keys: SessionKeys, at: number): z.infer<typeof StoredKeys> {
  return {
    kid: keys.kid,
    client_to_assistant: toBase64Url(keys.client_to_assistant),
    assistant_to_client: toBase64Url(keys.assistant_to_client),
    confirm: toBase64Url(keys.confirm),
    created_at: at,
  };
}

export function keyringOfFile(file: ClientKeysFile | AssistantKeysFile): Keyring {
  const bytes = (text: string) => fromBase64Url(text, { bytes: 32 })!;
  return keyringOf(
    file.keys.map((key) => ({
      kid: key.kid,
      client_to_assistant: bytes(key.client_to_assistant),
      assistant_to_client: bytes(key.assistant_to_client),
      confirm: bytes(key.confirm),
    })),
  );
}

/** Reads a keys file of that kind; refused when others may read it, or when it is not one. */
export function readKeysFile<S extends typeof ClientKeysFile | typeof AssistantKeysFile>(path: string, schema: S): z.infer<S> {
  const exposed = exposure([path]);
  if (exposed !== undefined) throw new KeysFileError(`the keys file is not private: ${exposed}`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new KeysFileError(`${path} does not exist: pair first`);
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new KeysFileError(`${path} is not JSON`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new KeysFileError(
      `${path} is not ${schema === ClientKeysFile ? "a client's" : "an assistant's"} keys file: ${z.prettifyError(parsed.error)}`,
    );
  return parsed.data as z.infer<S>;
}

/** Writes the file whole, mode 0600, replacing what was there. */
export function writeKeysFile(path: string, contents: ClientKeysFile | AssistantKeysFile): void {
  makePrivateFolder(dirname(path));
  const beside = join(dirname(path), `.${basename(path)}.${randomUUID()}`);
  createPrivateFile(beside, `${JSON.stringify(contents, null, 2)}\n`);
  try {
    renameSync(beside, path);
  } catch (error) {
    rmSync(beside, { force: true });
    throw error;
  }
}

/**
 * The assistant's keys, from its file, and the rotations it answers, kept in it before any answer goes
 * out (an answer is never given for keys not kept). The same rotation again is answered as it was.
 */
export class AssistantKeys {
  private keyringNow: Keyring;

  constructor(
    private readonly path: string,
    private file: AssistantKeysFile,
    private readonly clock: () => number = Date.now,
  ) {
    this.keyringNow = keyringOfFile(file);
  }

  readonly keyring = (): Keyring => this.keyringNow;

  readonly rotate = async (request: RekeyRequest): Promise<RekeyAnswer> => {
    const done = this.file.keys.find((key) => key.rekey?.rekey_id === request.rekey_id)?.rekey;
    if (done !== undefined) return { assistant_key: done.assistant_key, mac: done.mac };
    const { answer, keys } = answerRekey(this.file.integration_id, this.keyringNow, request);
    this.file = {
      ...this.file,
      keys: [{ ...storedKeys(keys, this.clock()), rekey: { rekey_id: request.rekey_id, ...answer } }, ...this.file.keys].slice(
        0,
        KEPT_KEY_SETS,
      ),
    };
    writeKeysFile(this.path, this.file);
    this.keyringNow = keyringOfFile(this.file);
    return answer;
  };
}

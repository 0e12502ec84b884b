/**
 * `assistant-relay plugin`: the assistant plugin (1.3) standalone: it takes its integration's jobs from a
 * backend relay and answers them with a reasoner, until SIGTERM. Prints `{"plugin":"started",…}` once
 * it has started (its first heartbeat sent, its stream opening).
 *
 * Paired (PROTOCOL.md 7), it runs from its keys file: `--pairing-code CODE --keys FILE` completes the
 * pairing a client started (showing the short authentication string on stderr, asking the person whether
 * the client shows the same, sas-prompt.ts, and putting it in the started line) and writes the file; later, `--keys FILE` alone names the backend, the integration, the RELAY_TOKEN and
 * the keys that open BYO jobs. Key rotations the client asks for are answered, and the new keys kept in
 * the same file.
 */
import { AssistantKeys, AssistantKeysFile, storedKeys, writeKeysFile } from '../../storage/keys-file.js';
import { pairAsAssistant } from '../client/pairing.js';
import { startPlugin } from '../plugin/index.js';
import { REASONER_FLAGS, REASONER_USAGE, reasonerFrom, type ReasonerFlag } from '../reasoners/index.js';
import { keysFileFlag } from './client.js';
import { UsageError, baseUrlFlag, integer, logLevelOf, readFlags, requiredFlag, retentionOf } from './flags.js';
import { YES_USAGE, sasConfirmation } from './sas-prompt.js';
import { jsonLogger, readTokenFile, runUntilSignalled } from './service.js';

export const PLUGIN_USAGE = `usage: assistant-relay plugin --keys FILE [--backend URL --pairing-code CODE [--yes]] [options]
       assistant-relay plugin --backend URL --integration ID --relay-token-file FILE [options]
  --keys FILE              the assistant's keys file: the backend, the integration, its RELAY_TOKEN and the
                           keys of BYO jobs (mode 0600)
  --pairing-code CODE      pair first with the client that shows this code, and write --keys once you
                           have said that both sides show the same short authentication string
${YES_USAGE}
  --backend URL            the backend relay's base URL
  --integration ID         the integration this plugin answers for (unpaired: no BYO jobs)
  --relay-token-file FILE  the integration's RELAY_TOKEN (a private file)
  --db FILE                the plugin's own event log (default data/plugin.db)
  --provider KIND          the provider it speaks for (default assistant-relay)
  --max-concurrent-jobs N  jobs run at once (default 4)
  --retention D|off        forget jobs closed longer ago than D (their ids only once their deadline has
                           passed) and remove their events from the log, e.g. 7d (default 7d); off keeps
                           everything
  --reasoner NAME          builtin, openai or command (default builtin)
  --log-level L            fatal, error, warn, info, debug, trace, silent (default info)
${REASONER_USAGE}
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_BACKEND=http://127.0.0.1:8788.`;

const FLAGS = {
  backend: { type: 'string' },
  integration: { type: 'string' },
  'relay-token-file': { type: 'string' },
  keys: { type: 'string' },
  'pairing-code': { type: 'string' },
  yes: { type: 'boolean' },
  db: { type: 'string' },
  provider: { type: 'string' },
  'max-concurrent-jobs': { type: 'string' },
  retention: { type: 'string' },
  reasoner: { type: 'string' },
  'log-level': { type: 'string' },
  ...REASONER_FLAGS,
} as const;

/** Where the plugin answers, and with what: from the flags, or from a keys file (paired first if a code is given). */
interface Standing {
  readonly backendUrl: string;
  readonly integrationId: string;
  readonly relayToken: string;
  readonly providerKind: string;
  readonly keys: AssistantKeys | undefined;
  readonly sas: string | undefined;
}

async function standingOf(get: ReturnType<typeof readFlags<typeof FLAGS>>): Promise<Standing> {
  const required = (flag: 'backend' | 'integration' | 'relay-token-file' | 'keys') => requiredFlag(get, flag);
  const keysFile = get('keys');
  if (keysFile === undefined) {
    if (get('pairing-code') !== undefined) throw new UsageError('--pairing-code needs --keys: the file the pairing writes');
    if (get('yes') !== undefined) throw new UsageError('--yes goes with --pairing-code');
    return {
      backendUrl: required('backend'),
      integrationId: required('integration'),
      relayToken: readTokenFile(required('relay-token-file'), { create: false }),
      providerKind: get('provider') ?? 'assistant-relay',
      keys: undefined,
      sas: undefined,
    };
  }
  const given = (['integration', 'relay-token-file', 'provider'] as const).filter((flag) => get(flag) !== undefined);
  if (given.length > 0)
    throw new UsageError(`--keys names the integration, its token and its provider: leave out --${given.join(' and --')}`);
  let sas: string | undefined;
  const code = get('pairing-code');
  if (code === undefined && get('yes') !== undefined) throw new UsageError('--yes goes with --pairing-code');
  if (code !== undefined) {
    const backend = baseUrlFlag('backend', required('backend'));
    const paired = await pairAsAssistant({ backend, code, confirmSas: sasConfirmation(get('yes') === true, 'the client') });
    writeKeysFile(keysFile, {
      kind: 'assistant-relay/assistant-keys',
      version: 1,
      backend,
      integration_id: paired.integration_id,
      provider_kind: paired.provider_kind,
      relay_token: paired.token,
      keys: [storedKeys(paired.keys, Date.now())],
    });
    sas = paired.sas;
  }
  const file = keysFileFlag(keysFile, AssistantKeysFile);
  return {
    backendUrl: get('backend') ?? file.backend,
    integrationId: file.integration_id,
    relayToken: file.relay_token,
    providerKind: file.provider_kind,
    keys: new AssistantKeys(keysFile, file),
    sas,
  };
}

export async function pluginCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const get = readFlags(argv, FLAGS, env);
  const { backendUrl, integrationId, relayToken, providerKind, keys, sas } = await standingOf(get);
  const maxConcurrentJobs = integer('max-concurrent-jobs', get('max-concurrent-jobs') ?? '4', 1, 1_000);
  const flags = Object.fromEntries((Object.keys(REASONER_FLAGS) as ReasonerFlag[]).map((flag) => [flag, get(flag)]));
  const reasoner = reasonerFrom(get('reasoner') ?? 'builtin', { providerKind, flags }, env);
  const logger = jsonLogger(logLevelOf(get('log-level')));
  const retentionMs = retentionOf(get('retention'));
  const plugin = await startPlugin({
    backendUrl,
    integrationId,
    relayToken,
    reasoner,
    db: get('db') ?? 'data/plugin.db',
    providerKind,
    maxConcurrentJobs,
    logger,
    ...(retentionMs === undefined ? {} : { retentionMs }),
    ...(keys === undefined ? {} : { keys: keys.keyring, rotate: keys.rotate }),
  });
  logger.info({ backend: backendUrl, integration: integrationId, reasoner: reasoner.name, byo: keys !== undefined }, 'plugin started');
  runUntilSignalled(
    logger,
    {
      plugin: 'started',
      integration: integrationId,
      reasoner: reasoner.name,
      byo: keys !== undefined,
      ...(sas === undefined ? {} : { sas }),
    },
    () => plugin.stop(),
  );
}

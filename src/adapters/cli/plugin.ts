/**
 * `assistant-relay plugin`: the assistant plugin (1.3) standalone: it takes its integration's jobs from a
 * backend relay and answers them with a reasoner, until SIGTERM. Prints `{"plugin":"started",…}` once
 * it has started (its first heartbeat sent, its stream opening).
 */
import { startPlugin } from '../plugin/index.js';
import { REASONER_FLAGS, REASONER_USAGE, reasonerFrom, type ReasonerFlag } from '../reasoners/index.js';
import { integer, logLevelOf, readFlags, requiredFlag } from './flags.js';
import { jsonLogger, readTokenFile, runUntilSignalled } from './service.js';

export const PLUGIN_USAGE = `usage: assistant-relay plugin --backend URL --integration ID --relay-token-file FILE [options]
  --backend URL            the backend relay's base URL
  --integration ID         the integration this plugin answers for
  --relay-token-file FILE  the integration's RELAY_TOKEN (a private file)
  --db FILE                the plugin's own event log (default data/plugin.db)
  --provider KIND          the provider it speaks for (default assistant-relay)
  --max-concurrent-jobs N  jobs run at once (default 4)
  --reasoner NAME          builtin, openai or command (default builtin)
  --log-level L            fatal, error, warn, info, debug, trace, silent (default info)
${REASONER_USAGE}
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_BACKEND=http://127.0.0.1:8788.`;

const FLAGS = {
  backend: { type: 'string' },
  integration: { type: 'string' },
  'relay-token-file': { type: 'string' },
  db: { type: 'string' },
  provider: { type: 'string' },
  'max-concurrent-jobs': { type: 'string' },
  reasoner: { type: 'string' },
  'log-level': { type: 'string' },
  ...REASONER_FLAGS,
} as const;

export async function pluginCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const get = readFlags(argv, FLAGS, env);
  const required = (flag: 'backend' | 'integration' | 'relay-token-file') => requiredFlag(get, flag);
  const backendUrl = required('backend');
  const integrationId = required('integration');
  const relayToken = readTokenFile(required('relay-token-file'), { create: false });
  const providerKind = get('provider') ?? 'assistant-relay';
  const maxConcurrentJobs = integer('max-concurrent-jobs', get('max-concurrent-jobs') ?? '4', 1, 1_000);
  const flags = Object.fromEntries((Object.keys(REASONER_FLAGS) as ReasonerFlag[]).map((flag) => [flag, get(flag)]));
  const reasoner = reasonerFrom(get('reasoner') ?? 'builtin', { providerKind, flags }, env);
  const logger = jsonLogger(logLevelOf(get('log-level')));
  const plugin = await startPlugin({
    backendUrl,
    integrationId,
    relayToken,
    reasoner,
    db: get('db') ?? 'data/plugin.db',
    providerKind,
    maxConcurrentJobs,
    logger,
  });
  logger.info({ backend: backendUrl, integration: integrationId, reasoner: reasoner.name }, 'plugin started');
  runUntilSignalled(logger, { plugin: 'started', integration: integrationId, reasoner: reasoner.name }, () => plugin.stop());
}

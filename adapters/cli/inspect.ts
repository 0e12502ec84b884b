/**
 * `assistant-relay inspect`: the inspector's page on a host's, a backend relay's or an assistant plugin's event log, running or
 * not (the log is only read, as `replay` reads it): every session, task, delivery, job, integration and
 * pairing with its state; the chosen one's statechart, its timeline to scrub through, followed live.
 */
import { randomIds } from '../../engine/core/clock.js';
import { SchemaMismatchError } from '../../storage/errors.js';
import { LogOpenError } from '../../storage/log-reader.js';
import { InspectorModel } from '../inspector/model.js';
import { INSPECTOR_PORT, isLoopback, startInspectorServer } from '../inspector/server.js';
import { UsageError, integer, logLevelOf, readFlags, requiredFlag } from './flags.js';
import { jsonLogger, readTokenFile, runUntilSignalled } from './service.js';

export const INSPECT_USAGE = `usage: assistant-relay inspect --db FILE [options]
  --db FILE                a host's, a backend relay's or an assistant plugin's event log, only read: safe while its process runs
  --host H                 address to listen on (default 127.0.0.1)
  --port P                 port; 0 picks a free one (default ${INSPECTOR_PORT})
  --token-file FILE        the token the page's API asks for, created (0600, random) if absent; required
                           on an address other than loopback (open the page at …/#token=TOKEN)
  --log-level L            fatal, error, warn, info, debug, trace, silent (default info)
Each flag may also be set as ASSISTANT_RELAY_<FLAG>.`;

const FLAGS = {
  db: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'token-file': { type: 'string' },
  'log-level': { type: 'string' },
} as const;

/** The log's model, or a usage error that says why the file is not a log the inspector reads. */
async function openModel(db: string): Promise<InspectorModel> {
  let model: InspectorModel;
  try {
    model = await InspectorModel.open(db);
  } catch (error) {
    if (error instanceof LogOpenError || error instanceof SchemaMismatchError) throw new UsageError(`--db: ${error.message}`);
    throw error;
  }
  if (model.kind === 'unknown') {
    await model.close();
    throw new UsageError(`--db: ${model.fault}`);
  }
  return model;
}

export async function inspectCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const get = readFlags(argv, FLAGS, env);
  const db = requiredFlag(get, 'db');
  const host = get('host') ?? '127.0.0.1';
  const port = integer('port', get('port') ?? String(INSPECTOR_PORT), 0, 65535);
  const tokenFile = get('token-file');
  if (tokenFile === undefined && !isLoopback(host))
    throw new UsageError(`--host ${host} is not a loopback address: give --token-file, whose token the inspector then asks for`);
  const logger = jsonLogger(logLevelOf(get('log-level')));
  const token = tokenFile === undefined ? undefined : readTokenFile(tokenFile, { create: true });
  const model = await openModel(db);
  try {
    const inspector = await startInspectorServer(model, {
      host,
      port,
      epoch: randomIds.token(),
      logger,
      ...(token === undefined ? {} : { token }),
    });
    logger.info({ url: inspector.url, db, log: model.kind ?? null, events: model.end }, 'inspecting');
    runUntilSignalled(logger, { inspecting: inspector.url, db }, async () => {
      await inspector.close();
      await model.close();
    });
  } catch (error) {
    await model.close();
    throw error;
  }
}

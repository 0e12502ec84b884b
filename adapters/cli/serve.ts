/**
 * `assistant-relay serve`: the assistant host standalone, on its event log, until a signal stops it.
 */
import { BUILTIN_AGENTS, insightsAgent } from '../agents/index.js';
import { createAssistantHost } from '../host/host.js';
import { builtinReasoner } from '../reasoners/index.js';
import { parseServeArgs, type ServeOptions } from './args.js';
import { exitOnFatal, jsonLogger, readTokenFile, runUntilSignalled } from './service.js';

export { USAGE as SERVE_USAGE } from './args.js';

/** The token from --token, or from --token-file (created with a fresh random token on first use). */
function resolveToken(options: ServeOptions): string {
  return options.token ?? readTokenFile(options.tokenFile!, { create: true });
}

export async function serveCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const options = parseServeArgs(argv, env);
  const token = resolveToken(options);
  const logger = jsonLogger(options.logLevel);
  const host = await createAssistantHost({
    db: options.db,
    token,
    agent:
      options.insights === 'builtin'
        ? insightsAgent(builtinReasoner({ providerKind: 'assistant-relay' }), BUILTIN_AGENTS[options.agent])
        : options.agent,
    form: options.form,
    callbackAllowlist: options.callbackAllowlist,
    corsOrigins: options.corsOrigins,
    callbackLoopback: options.callbackLoopback,
    ...(options.callbackLoopbackPorts !== undefined ? { callbackLoopbackPorts: options.callbackLoopbackPorts } : {}),
    synchronous: options.synchronous,
    logger,
    ...(options.keepaliveMs !== undefined ? { keepaliveMs: options.keepaliveMs } : {}),
    ...(options.maxReaders !== undefined ? { maxReadersPerSession: options.maxReaders } : {}),
    ...(options.maxStreams !== undefined ? { maxStreams: options.maxStreams } : {}),
    ...(options.headersTimeoutMs !== undefined ? { headersTimeoutMs: options.headersTimeoutMs } : {}),
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.connectionIdleTimeoutMs !== undefined ? { connectionIdleTimeoutMs: options.connectionIdleTimeoutMs } : {}),
    ...(options.sessionIdleTtlMs !== undefined ? { sessionIdleTtlMs: options.sessionIdleTtlMs } : {}),
    ...(options.retentionMs !== undefined ? { retentionMs: options.retentionMs } : {}),
    onFatal: exitOnFatal(logger),
  });
  const url = await host.listen({ host: options.host, port: options.port });
  logger.info(
    {
      url,
      db: options.db,
      agent: options.agent,
      insights: options.insights,
      form: options.form,
      callback_allowlist: options.callbackAllowlist,
      callback_loopback: options.callbackLoopback,
      callback_loopback_ports: options.callbackLoopbackPorts,
      cors_origins: options.corsOrigins,
      epoch: host.epoch,
    },
    'serving',
  );
  runUntilSignalled(logger, { listening: url }, () => host.close());
}

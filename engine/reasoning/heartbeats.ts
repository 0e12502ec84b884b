/**
 * What a heartbeat (2.3) means for an integration: whether its provider admits the plugin's versions (6c),
 * and whether what the plugin says of itself is news worth logging (`integration.seen`: the integration
 * was not online, or its plugin, reasoner, status, versions or refusal changed). Pure: the engine appends
 * what this returns and keeps the offline deadline.
 */
import equal from 'fast-deep-equal';
import { admitsPlugin, providerOf, type CodedError, type Heartbeat } from '../../protocol/index.js';
import type { IntegrationSeen } from '../../machines/reasoning/backend-events.js';
import { isOnline, type IntegrationSnapshot } from '../../machines/reasoning/integration.js';

/** Why the backend refuses the plugin, if it does. */
export function refusalOf(integration: IntegrationSnapshot, heartbeat: Heartbeat): CodedError | undefined {
  const { provider_kind } = integration.context;
  if (heartbeat.provider_kind !== provider_kind) {
    return {
      code: 'unknown_provider',
      message: `this integration is for provider ${provider_kind}, not ${JSON.stringify(heartbeat.provider_kind.slice(0, 100))}`,
    };
  }
  const provider = providerOf(provider_kind);
  if (!provider.ok) return provider.error;
  const admitted = admitsPlugin(provider.provider, heartbeat);
  return admitted.ok ? undefined : admitted.error;
}

/** The `integration.seen` to log for this heartbeat, or `undefined` when the integration is online and nothing changed. */
export function seenOf(
  integration: IntegrationSnapshot,
  heartbeat: Heartbeat,
  refused: CodedError | undefined,
  at: number,
): IntegrationSeen | undefined {
  const seen = {
    plugin: heartbeat.plugin,
    reasoner: heartbeat.reasoner,
    status: heartbeat.status,
    schema_versions: heartbeat.schema_versions,
    envelope_versions: heartbeat.envelope_versions,
    ...(refused === undefined ? {} : { refused }),
  };
  const { seen: before } = integration.context;
  if (isOnline(integration) && before !== undefined && equal({ ...before, at: 0 }, { ...seen, at: 0 })) return undefined;
  return { type: 'integration.seen', integration_id: integration.context.integration_id, ...seen, at };
}

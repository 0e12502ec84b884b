/** Reasoning-channel fixtures shared by the backend's tests: a heartbeat an admitted plugin would send. */
import type { Heartbeat } from '../../src/protocol/index.js';

export function heartbeatOf(over: Partial<Heartbeat> = {}): Heartbeat {
  return {
    plugin: { name: 'test-plugin', version: '1.0.0' },
    provider_kind: 'assistant-relay',
    schema_versions: { min: 1, max: 1 },
    envelope_versions: { min: 1, max: 1 },
    status: 'ready',
    running_job_ids: [],
    reasoner: { name: 'builtin' },
    ...over,
  };
}

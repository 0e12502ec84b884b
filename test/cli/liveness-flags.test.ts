/** `assistant-relay backend`'s liveness flags (PROTOCOL.md 6e.25): each read into its setting, the defaults for the others, a bad value or a bad mix a usage error. */
import { describe, expect, it } from 'vitest';
import { quotaFlags } from '../../adapters/cli/backend.js';
import { UsageError } from '../../adapters/cli/flags.js';
import { livenessFlags } from '../../adapters/cli/liveness-flags.js';

const flags = (given: Record<string, string>) => (name: string) => given[name];

describe('livenessFlags', () => {
  it("gives the spec's and today's values when no flag is given: a heartbeat every 30 s, offline after three missed, a 90 s lease", () => {
    expect(livenessFlags(flags({}))).toEqual({ heartbeatIntervalMs: 30_000, missedHeartbeats: 3, leaseMs: 90_000 });
  });

  it('reads each flag into its setting', () => {
    expect(livenessFlags(flags({ 'heartbeat-interval': '2s', 'missed-heartbeats': '2', 'delivery-lease': '5s' }))).toEqual({
      heartbeatIntervalMs: 2_000,
      missedHeartbeats: 2,
      leaseMs: 5_000,
    });
    expect(livenessFlags(flags({ 'heartbeat-interval': '10m', 'delivery-lease': '1h' }))).toMatchObject({
      heartbeatIntervalMs: 600_000,
      leaseMs: 3_600_000,
    });
  });

  it.each([
    [{ 'heartbeat-interval': 'often' }, /--heartbeat-interval must be a duration/],
    [{ 'heartbeat-interval': '500ms' }, /--heartbeat-interval\) must be whole seconds from 1s to 600s/],
    [{ 'heartbeat-interval': '1500ms' }, /--heartbeat-interval\) must be whole seconds/],
    [{ 'heartbeat-interval': '11m', 'delivery-lease': '1h' }, /--heartbeat-interval\) must be whole seconds from 1s to 600s/],
    [{ 'missed-heartbeats': '0' }, /--missed-heartbeats must be between 1 and 100/],
    [{ 'missed-heartbeats': '101' }, /--missed-heartbeats must be between 1 and 100/],
    [{ 'missed-heartbeats': 'three' }, /--missed-heartbeats must be a whole number/],
    [{ 'delivery-lease': 'long' }, /--delivery-lease must be a duration/],
    [{ 'delivery-lease': '59s' }, /--delivery-lease\) must be from two heartbeat intervals \(60000ms\)/],
    [{ 'delivery-lease': '61m' }, /--delivery-lease\) must be from two heartbeat intervals .* to an hour/],
    // A longer interval alone leaves the 90 s lease under two of them: the operator must give a lease too.
    [{ 'heartbeat-interval': '1m' }, /--delivery-lease\) must be from two heartbeat intervals \(120000ms\)/],
  ])('%j is a usage error', (given, message) => {
    expect(() => livenessFlags(flags(given))).toThrow(UsageError);
    expect(() => livenessFlags(flags(given))).toThrow(message);
  });

  it('bounds --status-interval by two heartbeat intervals, whatever the interval', () => {
    expect(quotaFlags(flags({ 'status-interval': '10s' }), 5_000)).toEqual({ statusIntervalMs: 10_000 });
    expect(() => quotaFlags(flags({ 'status-interval': '11s' }), 5_000)).toThrow(/--status-interval must be at most 10000ms/);
    expect(quotaFlags(flags({ 'status-interval': '2m' }), 60_000)).toEqual({ statusIntervalMs: 120_000 });
  });
});

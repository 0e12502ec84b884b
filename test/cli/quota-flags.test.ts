/** `assistant-relay backend`'s quota flags (PROTOCOL.md 6e.18 to 6e.24): each read into its quota, the others left to their defaults, a bad value a usage error. */
import { describe, expect, it } from 'vitest';
import { quotaFlags } from '../../adapters/cli/backend.js';
import { UsageError } from '../../adapters/cli/flags.js';

const flags = (given: Record<string, string>) => (name: string) => given[name];

describe('quotaFlags', () => {
  it('reads each flag into its quota, and leaves out those not given', () => {
    expect(quotaFlags(flags({}))).toEqual({});
    expect(
      quotaFlags(
        flags({
          'max-open-jobs': '8',
          'max-followers': '16',
          'max-node-followers': '2000',
          'status-interval': '45s',
          'max-rekeys-per-hour': '2',
          'rekey-replace-after': '5m',
          'max-jobs-per-minute': '120',
          'max-settled-jobs': '5000',
          'max-stream-opens-per-minute': '3',
        }),
      ),
    ).toEqual({
      maxOpenJobs: 8,
      maxFollowers: 16,
      maxNodeFollowers: 2000,
      statusIntervalMs: 45_000,
      maxRekeysPerHour: 2,
      rekeyReplaceAfterMs: 300_000,
      maxJobsPerMinute: 120,
      maxSettledJobs: 5000,
      maxStreamsPerMinute: 3,
    });
  });

  it.each([
    ['max-open-jobs', '0', /--max-open-jobs must be between 1 and/],
    ['max-followers', 'many', /--max-followers must be a whole number/],
    ['max-node-followers', '-1', /--max-node-followers must be a whole number/],
    ['status-interval', '2m', /--status-interval must be at most 60000ms/],
    ['max-rekeys-per-hour', '33', /--max-rekeys-per-hour must be between 1 and 32/],
    ['rekey-replace-after', 'soon', /--rekey-replace-after must be a duration/],
    ['max-jobs-per-minute', '0', /--max-jobs-per-minute must be between 1 and/],
    ['max-settled-jobs', 'all', /--max-settled-jobs must be a whole number/],
    ['max-stream-opens-per-minute', '-2', /--max-stream-opens-per-minute must be a whole number/],
  ])('--%s %s is a usage error', (flag, value, message) => {
    expect(() => quotaFlags(flags({ [flag]: value }))).toThrow(UsageError);
    expect(() => quotaFlags(flags({ [flag]: value }))).toThrow(message);
  });
});

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ProviderRegistry,
  ProviderRegistryError,
  admitsPlugin,
  handlesJob,
  loadProviderRegistry,
  providerOf,
  shippedProviderRegistry,
  type ProviderDescriptor,
  type VersionRanges,
} from '../../protocol/providers.js';
import { tempDir } from '../support/host.js';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const shippedText = readFileSync(root('providers/registry.json'), 'utf8');

const ranges = (schema: [number, number], envelope: [number, number]): VersionRanges => ({
  schema_versions: { min: schema[0], max: schema[1] },
  envelope_versions: { min: envelope[0], max: envelope[1] },
});

describe('the shipped registry', () => {
  it('loads: assistant-relay available, a2a-bridge coming soon, both at version 1', () => {
    const summary = shippedProviderRegistry().providers.map(({ provider_kind, status, ...versions }) => [
      provider_kind,
      status,
      versions.schema_versions,
      versions.envelope_versions,
    ]);
    expect(summary).toEqual([
      ['assistant-relay', 'available', { min: 1, max: 1 }, { min: 1, max: 1 }],
      ['a2a-bridge', 'coming_soon', { min: 1, max: 1 }, { min: 1, max: 1 }],
    ]);
  });

  it('follows schemas/provider-registry.json, the JSON Schema its $schema names', () => {
    const json = JSON.parse(shippedText) as { $schema: string };
    const schema = JSON.parse(
      readFileSync(fileURLToPath(new URL(json.$schema, new URL('../../providers/', import.meta.url))), 'utf8'),
    ) as object;
    const validate = new Ajv2020({ strict: false }).compile(schema);
    expect(validate(json), JSON.stringify(validate.errors)).toBe(true);
  });

  it('is in the npm package', () => {
    const { files } = JSON.parse(readFileSync(root('package.json'), 'utf8')) as { files: string[] };
    expect(files).toContain('providers');
  });
});

describe('a broken registry file is refused, naming the file and the field', () => {
  const dir = tempDir();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  type Edit = (registry: { providers: Array<Record<string, unknown>> } & Record<string, unknown>) => void;

  /** The shipped registry, changed by `edit`, as a file. */
  function fileWith(edit: Edit): string {
    const registry = JSON.parse(shippedText) as Parameters<Edit>[0];
    edit(registry);
    const file = join(dir, `registry-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(registry));
    return file;
  }

  it.each([
    [
      'a provider_kind listed twice',
      (r) => (r.providers[1]!.provider_kind = 'assistant-relay'),
      'provider_kind "assistant-relay" is listed twice',
      'providers[1].provider_kind',
    ],
    [
      'a provider_kind with capitals',
      (r) => (r.providers[0]!.provider_kind = 'Assistant'),
      'provider_kind is 1 to 100 of a-z',
      'providers[0].provider_kind',
    ],
    ['a misspelt field', (r) => (r.providers[0]!.instal_commands = []), 'instal_commands', 'providers[0]'],
    ['a field missing', (r) => delete r.providers[0]!.display_name, 'expected string', 'providers[0].display_name'],
    ['an unknown status', (r) => (r.providers[1]!.status = 'beta'), 'coming_soon', 'providers[1].status'],
    [
      'a range running backwards',
      (r) => (r.providers[0]!.schema_versions = { min: 2, max: 1 }),
      'min <= max',
      'providers[0].schema_versions',
    ],
    ['version 0', (r) => (r.providers[0]!.envelope_versions = { min: 0, max: 1 }), '>=1', 'providers[0].envelope_versions.min'],
    [
      'a version that is not an integer',
      (r) => (r.providers[0]!.envelope_versions = { min: 1, max: 1.5 }),
      'expected int',
      'providers[0].envelope_versions.max',
    ],
    [
      'an unknown placeholder',
      (r) => (r.providers[0]!.install_commands = ['npm install', 'run --token {relay_token}']),
      '{base_url} and {integration_id}',
      'providers[0].install_commands[1]',
    ],
    [
      'a command of two lines',
      (r) => (r.providers[0]!.install_commands = ['npm install\nrm -rf ~']),
      'one line',
      'providers[0].install_commands[0]',
    ],
    [
      'an available provider with no pairing steps',
      (r) => (r.providers[0]!.pairing_instructions = []),
      'at least one install command and one pairing step',
      'providers[0]',
    ],
    ['no providers', (r) => (r.providers = []), '>=1', 'providers'],
    ['a field beside providers', (r) => (r.version = 2), '"version"', ''],
  ] as Array<[string, Edit, string, string]>)('%s', (_, edit, says, field) => {
    const file = fileWith(edit);
    const error = (() => {
      try {
        loadProviderRegistry(file);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(error).toBeInstanceOf(ProviderRegistryError);
    const lines = (error as Error).message.split('\n');
    expect(lines[0]).toBe(`${file} is not a valid provider registry:`);
    expect((error as Error).message).toContain(says);
    // zod's prettified issues: the field's path on its own line, nothing at the top level.
    if (field === '') expect(lines.filter((line) => line.includes('→ at'))).toEqual([]);
    else expect(lines).toContain(`  → at ${field}`);
  });

  it('a file that is not JSON', () => {
    const file = join(dir, 'not-json.json');
    writeFileSync(file, shippedText.slice(0, 100));
    expect(() => loadProviderRegistry(file)).toThrow(new RegExp(`^${file} cannot be read as JSON: `));
  });

  it('a file that is not there', () => {
    expect(() => loadProviderRegistry(join(dir, 'absent.json'))).toThrow(/absent\.json cannot be read as JSON: ENOENT/);
  });
});

describe('providerOf', () => {
  it.each([
    ['assistant-relay', { ok: true, provider: expect.objectContaining({ provider_kind: 'assistant-relay' }) }],
    [
      'a2a-bridge',
      {
        ok: false,
        error: { code: 'provider_coming_soon', message: 'A2A agent bridge (a2a-bridge) is coming soon: it cannot be used yet' },
      },
    ],
    [
      'openclaw',
      {
        ok: false,
        error: {
          code: 'unknown_provider',
          message: 'no provider in the registry has this provider_kind: "openclaw" (known: assistant-relay, a2a-bridge)',
        },
      },
    ],
    ['', { ok: false, error: { code: 'unknown_provider', message: expect.stringContaining(': "" (known:') } }],
    ['Assistant-Relay', { ok: false, error: expect.objectContaining({ code: 'unknown_provider' }) }],
  ])('%j', (kind, verdict) => {
    expect(providerOf(kind)).toEqual(verdict);
  });

  it('quotes an unknown kind cut to 100 characters, on one line', () => {
    const verdict = providerOf(`${'x'.repeat(500)}\n"`);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.error.message).toContain(`"${'x'.repeat(100)}" (known:`);
  });

  it('judges by the registry it is given', () => {
    const registry = ProviderRegistry.parse({
      providers: [{ ...JSON.parse(shippedText).providers[1], status: 'available', install_commands: ['a'], pairing_instructions: ['b'] }],
    });
    expect(providerOf('a2a-bridge', registry).ok).toBe(true);
    expect(providerOf('assistant-relay', registry)).toEqual({ ok: false, error: expect.objectContaining({ code: 'unknown_provider' }) });
  });
});

describe('admitsPlugin', () => {
  const provider = (schema: [number, number], envelope: [number, number]): ProviderDescriptor => ({
    ...shippedProviderRegistry().providers[0]!,
    ...ranges(schema, envelope),
  });

  it.each([
    ['the same single version', [1, 1], [1, 1], [1, 1], [1, 1], ranges([1, 1], [1, 1])],
    ['a plugin that handles more', [1, 1], [1, 1], [1, 3], [1, 2], ranges([1, 1], [1, 1])],
    ['ranges that meet at one end', [2, 4], [1, 3], [1, 2], [3, 9], ranges([2, 2], [3, 3])],
    ['a wider provider', [1, 5], [1, 5], [2, 3], [4, 4], ranges([2, 3], [4, 4])],
  ] as Array<[string, [number, number], [number, number], [number, number], [number, number], VersionRanges]>)(
    '%s: admitted, with the overlap',
    (_, providerSchema, providerEnvelope, pluginSchema, pluginEnvelope, versions) => {
      expect(admitsPlugin(provider(providerSchema, providerEnvelope), ranges(pluginSchema, pluginEnvelope))).toEqual({
        ok: true,
        versions,
      });
    },
  );

  it.each([
    [
      'a newer schema only',
      [1, 1],
      [1, 1],
      [2, 3],
      [1, 1],
      'the plugin handles schema_versions 2-3, provider assistant-relay allows 1-1: they do not overlap',
    ],
    [
      'an older envelope only',
      [1, 1],
      [3, 4],
      [1, 1],
      [1, 2],
      'the plugin handles envelope_versions 1-2, provider assistant-relay allows 3-4: they do not overlap',
    ],
    [
      'neither',
      [1, 1],
      [1, 2],
      [5, 5],
      [5, 6],
      'the plugin handles schema_versions 5-5, provider assistant-relay allows 1-1: they do not overlap; the plugin handles envelope_versions 5-6, provider assistant-relay allows 1-2: they do not overlap',
    ],
  ] as Array<[string, [number, number], [number, number], [number, number], [number, number], string]>)(
    '%s: refused unsupported_version, naming both ranges',
    (_, providerSchema, providerEnvelope, pluginSchema, pluginEnvelope, message) => {
      expect(admitsPlugin(provider(providerSchema, providerEnvelope), ranges(pluginSchema, pluginEnvelope))).toEqual({
        ok: false,
        error: { code: 'unsupported_version', message },
      });
    },
  );
});

describe('handlesJob', () => {
  const plugin = ranges([1, 2], [1, 1]);

  it.each([
    [1, 1],
    [2, 1],
  ])('schema_version %i, envelope_version %i: handled', (schema_version, envelope_version) => {
    expect(handlesJob(plugin, { schema_version, envelope_version })).toEqual({ ok: true });
  });

  it.each([
    [3, 1, "the job's schema_version 3 is outside the 1-2 this plugin handles"],
    [1, 2, "the job's envelope_version 2 is outside the 1-1 this plugin handles"],
    [0, 1, "the job's schema_version 0 is outside the 1-2 this plugin handles"],
    [1.5, 1, "the job's schema_version 1.5 is outside the 1-2 this plugin handles"],
    [Number.NaN, 1, "the job's schema_version NaN is outside the 1-2 this plugin handles"],
    [
      9,
      9,
      "the job's schema_version 9 is outside the 1-2 this plugin handles; the job's envelope_version 9 is outside the 1-1 this plugin handles",
    ],
  ])('schema_version %d, envelope_version %d: unsupported_version', (schema_version, envelope_version, message) => {
    expect(handlesJob(plugin, { schema_version, envelope_version })).toEqual({
      ok: false,
      error: { code: 'unsupported_version', message },
    });
  });
});

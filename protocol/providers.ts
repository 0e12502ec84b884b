/**
 * The provider registry (1.8, 9): which kinds of assistant plugin exist, how to install and pair each,
 * and which protocol versions each allows. The registry is data, `providers/registry.json` (shipped in
 * the package), validated here; the backend and the plugin judge providers, plugins and jobs with the
 * pure functions below. Decisions: PROTOCOL.md 6c.
 */
import { packageFile } from './package-files.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { PROVIDER_ERRORS, type ProviderErrorCode } from './errors.js';
import { VersionRange } from './reasoning.js';

/** The `{name}`s install commands and pairing steps may carry; a client fills them in for its integration. */
export const PLACEHOLDERS = ['base_url', 'integration_id'] as const;

/** A command or step: one line of text, each `{name}` in it one of PLACEHOLDERS. */
const InstructionLine = z
  .string()
  .min(1)
  .max(2_000)
  .regex(/^[^\p{Cc}]*$/u, { message: 'one line, without control characters' })
  .refine((line) => [...line.matchAll(/\{([^{}]*)\}/g)].every(([, name]) => (PLACEHOLDERS as readonly string[]).includes(name!)), {
    message: `the only placeholders are ${PLACEHOLDERS.map((name) => `{${name}}`).join(' and ')}`,
  });

/** Which versions a provider allows, or a plugin handles: inclusive ranges, as in a heartbeat. */
export const VersionRanges = z.object({ schema_versions: VersionRange, envelope_versions: VersionRange });
export type VersionRanges = z.infer<typeof VersionRanges>;

export const ProviderDescriptor = z
  .object({
    /** The value jobs and heartbeats carry in `provider_kind`. */
    provider_kind: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,99}$/, { message: 'provider_kind is 1 to 100 of a-z, 0-9 and -, starting with a letter' }),
    display_name: z.string().min(1).max(100),
    /** `coming_soon`: listed, so that a client can show it, and refused wherever it would be used. */
    status: z.enum(['available', 'coming_soon']),
    /** Shell commands, in order, run on the assistant's machine: install the plugin and start it. */
    install_commands: z.array(InstructionLine).max(20),
    /** Steps, in order, that pair the plugin with an integration. */
    pairing_instructions: z.array(InstructionLine).max(20),
    ...VersionRanges.shape,
  })
  .strict()
  .refine(
    (provider) => provider.status === 'coming_soon' || (provider.install_commands.length > 0 && provider.pairing_instructions.length > 0),
    {
      message: 'an available provider has at least one install command and one pairing step',
    },
  );
export type ProviderDescriptor = z.infer<typeof ProviderDescriptor>;

export const ProviderRegistry = z
  .object({
    /** Where editors find the registry's JSON Schema (schemas/provider-registry.json). */
    $schema: z.string().optional(),
    providers: z.array(ProviderDescriptor).min(1).max(100),
  })
  .strict()
  .superRefine(({ providers }, context) => {
    providers.forEach(({ provider_kind }, index) => {
      if (providers.findIndex((other) => other.provider_kind === provider_kind) < index) {
        context.addIssue({
          code: 'custom',
          path: ['providers', index, 'provider_kind'],
          message: `provider_kind "${provider_kind}" is listed twice`,
        });
      }
    });
  });
export type ProviderRegistry = z.infer<typeof ProviderRegistry>;

/** A registry file that is not JSON, or not a valid registry; the message names the file and each wrong field. */
export class ProviderRegistryError extends Error {
  override readonly name = 'ProviderRegistryError';
}

/** Reads and validates a registry file. */
export function loadProviderRegistry(file: string | URL): ProviderRegistry {
  const name = file instanceof URL ? fileURLToPath(file) : file;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ProviderRegistryError(`${name} cannot be read as JSON: ${(error as Error).message}`, { cause: error });
  }
  const parsed = ProviderRegistry.safeParse(json);
  if (!parsed.success) throw new ProviderRegistryError(`${name} is not a valid provider registry:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The registry this package ships. */
export const SHIPPED_REGISTRY = packageFile('providers/registry.json', import.meta.url, 1);

let shipped: ProviderRegistry | undefined;

/** The shipped registry, read on first use. */
export function shippedProviderRegistry(): ProviderRegistry {
  return (shipped ??= loadProviderRegistry(SHIPPED_REGISTRY));
}

export interface ProviderRefusal {
  readonly ok: false;
  readonly error: { readonly code: ProviderErrorCode; readonly message: string };
}

function refuse(code: ProviderErrorCode, message: string): ProviderRefusal {
  return { ok: false, error: { code, message } };
}

/** The provider of a `provider_kind`; unknown or coming soon is a refusal. */
export function providerOf(
  kind: string,
  registry: ProviderRegistry = shippedProviderRegistry(),
): { readonly ok: true; readonly provider: ProviderDescriptor } | ProviderRefusal {
  const provider = registry.providers.find((candidate) => candidate.provider_kind === kind);
  if (provider === undefined) {
    const known = registry.providers.map((candidate) => candidate.provider_kind).join(', ');
    // The kind comes from outside: quoted and cut short, so that the message stays one bounded line.
    return refuse('unknown_provider', `${PROVIDER_ERRORS.unknown_provider}: ${JSON.stringify(kind.slice(0, 100))} (known: ${known})`);
  }
  if (provider.status === 'coming_soon') {
    return refuse('provider_coming_soon', `${provider.display_name} (${provider.provider_kind}) is coming soon: it cannot be used yet`);
  }
  return { ok: true, provider };
}

/** Each version a job carries, and the field of the range of it that a provider allows and a plugin handles. */
const VERSION_FIELDS = [
  ['schema_version', 'schema_versions'],
  ['envelope_version', 'envelope_versions'],
] as const;

/**
 * Whether a provider admits a plugin, judged on each heartbeat: the plugin's ranges must overlap the
 * provider's, for the schema and for the envelope. Admitted, the overlaps are the versions jobs for
 * this plugin may carry.
 */
export function admitsPlugin(
  provider: ProviderDescriptor,
  heartbeat: VersionRanges,
): { readonly ok: true; readonly versions: VersionRanges } | ProviderRefusal {
  const versions = {
    schema_versions: intersection(heartbeat.schema_versions, provider.schema_versions),
    envelope_versions: intersection(heartbeat.envelope_versions, provider.envelope_versions),
  };
  const misses = VERSION_FIELDS.map(([, field]) => field).filter((field) => versions[field].min > versions[field].max);
  if (misses.length === 0) return { ok: true, versions };
  return refuse(
    'unsupported_version',
    misses
      .map(
        (field) =>
          `the plugin handles ${field} ${formatRange(heartbeat[field])}, provider ${provider.provider_kind} allows ${formatRange(provider[field])}: they do not overlap`,
      )
      .join('; '),
  );
}

/** Whether a plugin that handles `plugin`'s ranges can take a job: its versions inside them, else the job fails. */
export function handlesJob(
  plugin: VersionRanges,
  job: { readonly schema_version: number; readonly envelope_version: number },
): { readonly ok: true } | ProviderRefusal {
  const misses = VERSION_FIELDS.filter(([version, range]) => !inRange(plugin[range], job[version]));
  if (misses.length === 0) return { ok: true };
  return refuse(
    'unsupported_version',
    misses
      .map(([version, range]) => `the job's ${version} ${job[version]} is outside the ${formatRange(plugin[range])} this plugin handles`)
      .join('; '),
  );
}

/** Empty (min above max) when the ranges do not meet. */
function intersection(a: VersionRange, b: VersionRange): VersionRange {
  return { min: Math.max(a.min, b.min), max: Math.min(a.max, b.max) };
}

function inRange(range: VersionRange, version: number): boolean {
  return Number.isInteger(version) && version >= range.min && version <= range.max;
}

/** `1-3`, `2-2`: both ends always, so that a single version reads as a range too. */
function formatRange(range: VersionRange): string {
  return `${range.min}-${range.max}`;
}

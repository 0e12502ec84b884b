/** A command line or an option that cannot be used as given: the CLI prints it with the usage and exits 2. Thrown by the CLI's flags and by the reasoners' own options (reasoners/index.ts). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

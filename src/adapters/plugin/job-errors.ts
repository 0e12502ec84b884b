/**
 * The `error.code` values of the failed jobs the plugin itself reports (PROTOCOL.md 6d). A reasoner's own
 * codes (a `ReasonerError`'s) pass through as they are. Until the job error table lands in
 * protocol/errors.ts, the plugin's codes are defined here once.
 */
export const PLUGIN_JOB_ERRORS = {
  unsupported_version: "the job's schema_version or envelope_version is outside the versions this plugin handles",
  invalid_job: 'the job envelope does not follow the ReasoningJob schema, or its response_schema is not a valid JSON Schema',
  byo_unsupported: 'this plugin cannot decrypt BYO jobs yet',
  deadline_exceeded: "the job's deadline passed before the reasoner answered",
  invalid_result: "the reasoner's result does not follow the job's response_schema",
  reasoner_error: 'the reasoner failed',
} as const;

export type PluginJobErrorCode = keyof typeof PLUGIN_JOB_ERRORS;

export function jobError(code: PluginJobErrorCode, message: string = PLUGIN_JOB_ERRORS[code]) {
  return { error: { code, message } };
}

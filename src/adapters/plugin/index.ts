export { Plugin, startPlugin, type PluginOptions, type PluginStatus } from './plugin.js';
export { PLUGIN_JOB_ERRORS, type PluginJobErrorCode } from './job-errors.js';
export type { PluginEvent, JobStage } from './events.js';

/** The assistant plugin's public face: start one, and the events of its log. */
export { Plugin, startPlugin, type PluginOptions, type PluginStatus } from './plugin.js';
export type { PluginEvent } from '../../machines/reasoning/plugin-job-events.js';
export type { PluginJobStage } from '../../machines/reasoning/plugin-job.js';

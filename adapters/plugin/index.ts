export { Plugin, startPlugin, type PluginOptions, type PluginStatus } from './plugin.js';
export type { PluginEvent, JobStage } from './events.js';

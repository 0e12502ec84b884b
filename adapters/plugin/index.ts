/** The assistant plugin's public face: start one, and the events of its log. */
export { Plugin, startPlugin, type PluginOptions, type PluginStatus } from './plugin.js';
export type { PluginEvent, JobStage } from './events.js';

// A plugin in a process of its own, built from dist/, for the SIGKILL tests: its reasoner answers every job
// with one insight, except that, with PLUGIN_HANG=1, a job whose payload says `hang` never ends.
// Prints {"ready":true} once started; SIGTERM stops it gracefully.
import { startPlugin } from '../../dist/adapters/plugin/index.js';

const reasoner = {
  name: 'child',
  reason(request) {
    if (process.env.PLUGIN_HANG === '1' && request.payload.hang === true) return new Promise(() => {});
    return Promise.resolve({ insights: [{ text: `answer to ${request.job_id}`, kind: 'fact', confidence: 1 }] });
  },
};

const plugin = await startPlugin({
  backendUrl: process.env.PLUGIN_BACKEND,
  integrationId: process.env.PLUGIN_INTEGRATION,
  relayToken: process.env.PLUGIN_TOKEN,
  db: process.env.PLUGIN_DB,
  providerKind: 'test-provider',
  reasoner,
  stopGraceMs: 0,
});
process.stdout.write('{"ready":true}\n');
process.once('SIGTERM', () => {
  void plugin.stop().then(() => process.exit(0));
});

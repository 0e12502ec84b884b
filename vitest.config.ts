import { defineConfig } from 'vitest/config';

/**
 * The reasoning channel's suites, run again against three backend nodes on the shared stores
 * (test/support/backend.ts): the HTTP suites, the backend's statecharts driven transition by transition,
 * and the property of random job workloads.
 */
const CLUSTER_SUITES = ['test/backend/**/*.test.ts', 'test/model/{job,integration,pairing}.test.ts', 'test/properties/jobs.test.ts'];

export default defineConfig({
  test: {
    // The process tests run the built CLI: rebuild dist/ first if a source changed.
    globalSetup: ['test/support/build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests open real sockets, files and child processes; two workers fit a 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'one node', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'three nodes, NATS',
          include: CLUSTER_SUITES,
          env: { ASSISTANT_RELAY_TEST_BACKEND: 'cluster', ASSISTANT_RELAY_TEST_BROKER: 'nats' },
        },
      },
      {
        extends: true,
        test: {
          name: 'three nodes, Redis',
          include: CLUSTER_SUITES,
          env: { ASSISTANT_RELAY_TEST_BACKEND: 'cluster', ASSISTANT_RELAY_TEST_BROKER: 'redis' },
        },
      },
    ],
  },
});

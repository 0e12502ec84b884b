import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The process tests run the built CLI: rebuild dist/ first if src/ changed.
    globalSetup: ['test/support/build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests open real sockets, files and child processes; two workers fit a 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // test/: the SDK's tests; demo/: the demo page's unit tests.
    include: ['test/**/*.test.ts', 'demo/**/*.test.ts'],
    environment: 'node',
    // The client tests run real sockets on loopback and the map generator
    // in WebAssembly: generous, though nothing waits on a timer.
    testTimeout: 20_000,
  },
});

import { defineConfig } from 'vitest/config';

// Two projects: `unit` needs nothing but Node; `envtest` needs the kube-apiserver and kine
// binaries built by hack/build-testbins.sh and starts them once in its global setup.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['operator/src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'envtest',
          include: ['test/envtest/**/*.test.ts'],
          globalSetup: ['test/envtest/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

import { defineConfig } from 'vitest/config';

// Three projects, run one after the other (sequence.groupOrder) so the real-time e2e machines never
// compete for the 2 cores with CPU-heavy unit tests:
// - unit: needs nothing but Node;
// - envtest: needs kube-apiserver and kine (hack/build-testbins.sh); its global setup starts them once;
// - e2e: emulated Oberon machines on a real UDP air, judged from the air, in real time;
// - browser: the web console and the browser lab in Debian's chromium (playwright-core), real time.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: ['operator/src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'envtest',
          sequence: { groupOrder: 1 },
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
          sequence: { groupOrder: 2 },
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'browser',
          sequence: { groupOrder: 3 },
          include: ['test/browser/**/*.test.ts'],
          testTimeout: 900_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

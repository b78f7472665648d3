// Setup file of the `cluster` project: before a file's tests, wait for the node its global setup
// starts in the background (global-setup.ts). A node that did not start fails the file under CI;
// elsewhere harness.ts's skipReason() carries the reason and the tests report themselves skipped.
import { inject } from 'vitest';
import { awaitOutcome } from './harness.ts';

const LIMITS = {
  waitMs: 20 * 60_000, // node-up takes about a minute; a cold containerd image import a few more
} as const;

const file = inject('clusterReadyFile');
if (file) {
  const outcome = await awaitOutcome(file, 'the node', LIMITS.waitMs);
  if (!outcome.ok && process.env.CI === 'true') throw new Error(`cluster: ${outcome.reason}`);
}

// Setup file of the `cluster` project: before a file's tests, wait for the node its global setup
// starts in the background (global-setup.ts). A node that did not start fails the file under CI;
// elsewhere harness.ts's skipReason() carries the reason and the tests report themselves skipped.
import { existsSync } from 'node:fs';
import { inject } from 'vitest';
import { nodeOutcome } from './harness.ts';

const LIMITS = {
  waitMs: 20 * 60_000, // node-up takes about a minute; a cold containerd image import a few more
  pollMs: 500,
  reportMs: 30_000, // a progress line while waiting
} as const;

const file = inject('clusterReadyFile');
if (file) {
  const t0 = Date.now();
  let reported = t0;
  while (!existsSync(file)) {
    if (Date.now() - t0 > LIMITS.waitMs)
      throw new Error(`cluster: the node was not up after ${LIMITS.waitMs / 60_000} min (no ${file})`);
    if (Date.now() - reported >= LIMITS.reportMs) {
      reported = Date.now();
      console.log(
        `[cluster] waiting for the node to come up (${Math.round((reported - t0) / 1000)} s so far)`,
      );
    }
    await new Promise((r) => setTimeout(r, LIMITS.pollMs));
  }
  const outcome = nodeOutcome();
  if (outcome && !outcome.ok && process.env.CI === 'true') throw new Error(`cluster: ${outcome.reason}`);
}

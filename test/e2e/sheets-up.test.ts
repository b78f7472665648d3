// `retrokube sheets up`: a real local cluster — apiserver, two node agents as child processes, the
// sample deployments (WASM modules from the image store: "hello" runs to completion, "ticker" runs
// for good) — reaches every sample pod Running or Succeeded within a minute.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runUp } from '../../operator/src/local/sheets-up.ts';
import { openXlsxStore } from '../../operator/src/sheets/store/xlsx.ts';

describe('sheets up', () => {
  it('every sample pod is Running or Succeeded within a minute; tables show ages and the real node address', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sk-up-'));
    const workbook = path.join(dir, 'cluster.xlsx');
    let out = '';
    try {
      const r = await runUp({
        nodes: 2,
        workbook,
        port: 0,
        token: 'up-test',
        waitSec: 60,
        detach: true,
        allowProcess: true, // the web sample is a process pod: opted in by name
        out: (s) => (out += s),
      });
      expect(r.agents).toBe(2);
      expect(r.settled, out).toBe(true);
      expect(r.seconds).toBeLessThan(60);
      expect(r.succeeded).toBe(1); // hello-1: prints and ends, restart_policy OnFailure
      expect(r.running).toBe(2); // ticker-1, ticker-2: long-running WASM
      expect(out).toMatch(/NAME\s+DEPLOYMENT\s+NODE\s+PHASE\s+CONTAINER\s+ENDPOINTS\s+RESTARTS\s+REASON/);
      expect(out).toMatch(
        /hello-1\s+hello\s+node-\w\s+Succeeded\s+wasm-\d+\s+-\s+0\s+completed \(exit code 0\)/,
      );
      // Nodes on this machine talk to the apiserver over loopback and say so; heartbeats are ages.
      expect(out).toMatch(/node-a\s+127\.0\.0\.1\s+\d+\s+\d+\s+\d+\s+Ready\s+\d+s ago/);
      const store = await openXlsxStore(workbook, { watchMs: 0 });
      try {
        // nodes register in the order their first heartbeats arrive, which is not fixed
        expect(
          store
            .rows('Nodes')
            .map((n) => n.name)
            .sort(),
        ).toEqual(['node-a', 'node-b']);
        expect(store.get('Pods', 'hello-1')).toMatchObject({ phase: 'Succeeded', exit_code: 0, restarts: 0 });
        expect(store.rows('Events').length).toBeGreaterThan(0);
      } finally {
        await store.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

// `retrokube sheets up`: a real local cluster — apiserver, two node agents as child processes, the
// sample deployments (a WASM hello from the image store and an HTTP server process) — converges.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runUp } from '../../operator/src/sheets/local/up.ts';
import { openXlsxStore } from '../../operator/src/sheets/store/xlsx.ts';

describe('sheets up', () => {
  it('starts the apiserver and 2 node agents; every sample pod is started by a node and the web pods run', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sk-up-'));
    const workbook = path.join(dir, 'cluster.xlsx');
    let out = '';
    try {
      const r = await runUp({
        nodes: 2,
        workbook,
        port: 0,
        token: 'up-test',
        waitSec: 240,
        detach: true,
        allowProcess: true, // the web sample is a process pod: opted in by name
        out: (s) => (out += s),
      });
      expect(r.agents).toBe(2);
      expect(out).toMatch(/NAME\s+DEPLOYMENT\s+NODE\s+PHASE\s+CONTAINER\s+ENDPOINTS/);
      expect(out).toMatch(/node-a\s+\S+\s+\d+/);
      expect(r.started).toBe(3); // hello-1 (wasm, runs to completion) and web-1, web-2 (process)
      expect(r.running).toBeGreaterThanOrEqual(2);
      const store = await openXlsxStore(workbook, { watchMs: 0 });
      try {
        // nodes register in the order their first heartbeats arrive, which is not fixed
        expect(
          store
            .rows('Nodes')
            .map((n) => n.name)
            .sort(),
        ).toEqual(['node-a', 'node-b']);
        expect(store.rows('Events').length).toBeGreaterThan(0);
      } finally {
        await store.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 400_000);
});

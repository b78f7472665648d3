import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseSheetsFile, startLocalSheets } from './sheets.ts';
import { SpecError } from './spec.ts';
import { loadFile } from './up.ts';

const FILE = `apiVersion: retrokube.io/v1alpha1
kind: OberonKube
metadata: {name: oberon}
spec: {nodes: 2}
---
apiVersion: retrokube.io/v1alpha1
kind: SheetCluster
metadata: {name: sheets}
spec:
  nodes: 2
  samples: true
  failoverSeconds: 6
  tokenSecretRef: {name: team}
  deployments:
    - {name: hello, replicas: 2}
    - {name: tick, image: "sicf:hello-wasm:v1", replicas: 1, cpu_req: 10, mem_req: 8}
---
apiVersion: v1
kind: Secret
metadata: {name: team}
stringData: {token: s3cret-team-token}
`;

describe('retrokube up FILE with a SheetCluster', () => {
  it('reads the SheetCluster beside the OberonKube; bad fields are named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-upfile-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'both.yaml');
    writeFileSync(path, FILE);
    const f = loadFile(path);
    expect(f.kube?.name).toBe('oberon');
    expect(f.sheets?.cluster.metadata.name).toBe('sheets');
    expect(f.sheets?.secrets.get('team')).toEqual({ token: 's3cret-team-token' });
    const bad = (spec: string) => () =>
      parseSheetsFile(
        `apiVersion: retrokube.io/v1alpha1\nkind: SheetCluster\nmetadata: {name: x}\nspec: ${spec}\n`,
        'f.yaml',
      );
    expect(bad('{nodes: 51}')).toThrow(/f.yaml SheetCluster spec\.nodes/);
    expect(bad('{runtimes: [docker]}')).toThrow(/spec\.dockerSocket/);
    expect(bad('{deployments: [{name: Web}]}')).toThrow(/spec\.deployments\.0\.name/);
    expect(bad('{}')).not.toThrow();
    expect(() => parseSheetsFile('apiVersion: v1\nkind: SheetCluster\nmetadata: {name: x}\n')).toThrow(
      SpecError,
    );
  });

  it('runs the apiserver and agents as local processes; spec.deployments reach the sheet and the wasm pods run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-upsheets-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const f = parseSheetsFile(FILE, 'both.yaml');
    if (!f) throw new Error('no SheetCluster parsed');
    const lines: string[] = [];
    const running = await startLocalSheets(f, { dir, seed: 'test-seed', out: (l) => lines.push(l) });
    onTestFinished(() => running.stop());
    expect(lines.join('\n')).toMatch(/2 node agent\(s\) \(wasm\)/);
    const deadline = Date.now() + 60_000;
    let pods: Record<string, unknown>[] = [];
    let nodes: Record<string, unknown>[] = [];
    for (;;) {
      pods = await running.client.get('pods');
      // Both agents registered too: under load the three pods can all start on the first one
      // before the second has registered (seen at load 8).
      nodes = await running.client.get('nodes');
      const started = pods.filter(
        (p) => p.phase === 'Running' || (p.node && p.exit_code !== null && p.exit_code !== ''),
      );
      if ((started.length >= 3 && nodes.length >= 2) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const byDeployment = (d: string) => pods.filter((p) => p.deployment === d);
    expect(byDeployment('hello')).toHaveLength(2); // the spec's replicas, applied through the contract
    expect(byDeployment('tick')).toHaveLength(1);
    for (const p of [...byDeployment('hello'), ...byDeployment('tick')])
      expect(String(p.node)).toMatch(/^node-[01]$/);
    // The token is the FILE's Secret: the apiserver refuses any other.
    expect(nodes.map((n) => n.name).sort()).toEqual(['node-0', 'node-1']);
  }, 120_000);
});

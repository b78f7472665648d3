// Fleet rollouts over Sheeternetes clusters run by `retrokube up`: two SheetClusters (an apiserver
// and one node agent each, real local processes, real xlsx workbooks) and a Rollout with
// selector.kind SheetCluster. Judged from each sheet as the operator judges it (every pod Running on
// the deployment's current spec hash), changed through each apiserver's signed apply.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LocalRolloutView } from '../../operator/src/local/rollout-runner.ts';
import { settled } from '../../operator/src/rollout/plan.ts';
import { SheetsClient } from '../../operator/src/sheets/ctl/client.ts';
import { UpProcess } from './fleet-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-rollouts-sheets-e2e-'));
const state = join(dir, 'state');
const HELLO = 'sicf:hello-wasm:v1'; // prints and ends
const TICKER = 'sicf:ticker-wasm:v1'; // runs for good
const TOKEN = 'rollouts-sheets-e2e-token';
const KEY = 'rollouts-sheets-e2e-signing-key-0123456789';

// The token and signing key are the FILE's Secrets, so the test can act as a person on the sheet.
const sheet = (name: string) => `apiVersion: retrokube.io/v1alpha1
kind: SheetCluster
metadata: {name: ${name}, labels: {fleet: sheets}}
spec:
  nodes: 1
  tokenSecretRef: {name: access, key: token}
  signingKeySecretRef: {name: access, key: key}
---
`;
const SHEETS = `${sheet('sa')}${sheet('sb')}apiVersion: v1
kind: Secret
metadata: {name: access}
stringData: {token: ${TOKEN}, key: ${KEY}}
---
`;
const FLEET = `${SHEETS}apiVersion: retrokube.io/v1alpha1
kind: Rollout
metadata: {name: ticker}
spec:
  paused: true
  selector: {kind: SheetCluster, matchLabels: {fleet: sheets}}
  change: {deployment: web, image: "${TICKER}"}
  strategy: {type: rolling, checkSeconds: 4, stepDeadlineSeconds: 180}
  check: {minRunning: 1}
`;

const up = new UpProcess(state);
describe.sequential('fleet rollouts over two SheetClusters run by retrokube up', () => {
  afterAll(async () => {
    await up.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `up` with a FILE; a client per SheetCluster once both are up (their apiservers' URLs are new each time). */
  const start = async (file: string, text: string) => {
    writeFileSync(join(dir, file), text);
    up.start(join(dir, file));
    const clusters = await up.until(
      () => up.get<{ name: string; url?: string }[]>('/clusters'),
      (c) => c.length === 2,
      120_000,
      'both SheetClusters up',
    );
    return new Map(
      clusters.map((c) => [c.name, new SheetsClient({ url: c.url as string, token: TOKEN, key: KEY })]),
    );
  };

  it('a rolling image change: each sheet runs the new spec on every pod before the next starts', async () => {
    // `web` is the sheet's own deployment (a person applied it; no spec owns it), there before the
    // Rollout is: a rollout checks its targets at its first look, paused or not, and one that looked
    // before the person's apply failed for good ("deployment web does not exist on sa, sb"; seen 3
    // times in 4 at load 13-20). So the sheets start alone first; their workbooks stay in the state
    // folder across `down`.
    let sheets = await start('sheets.yaml', SHEETS);
    for (const c of sheets.values())
      await c.post({
        action: 'apply',
        deployments: [
          { name: 'web', image: HELLO, replicas: 2, cpu_req: 50, mem_req: 16, restart_policy: 'OnFailure' },
        ],
      });
    expect((await up.cli('down')).code).toBe(0);
    sheets = await start('fleet.yaml', FLEET);
    for (const [name, c] of sheets)
      await up.until(
        () => c.get('nodes'),
        (n) => n.some((x) => x.status === 'Ready'),
        90_000,
        `${name}: its node Ready in the sheet`,
      );
    await up.until(
      () => up.get<LocalRolloutView>('/rollouts/ticker'),
      (x) => x.status.phase === 'Paused',
      60_000,
      'the rollout paused, its targets checked',
    );
    const resumed = await up.cli('rollout', 'resume', 'ticker');
    expect(resumed.code, resumed.stderr).toBe(0);
    const r = await up.until(
      () => up.get<LocalRolloutView>('/rollouts/ticker'),
      (x) => settled(x.status),
      400_000,
      'the rollout ends',
    );
    expect(r.status.phase, JSON.stringify(r.status)).toBe('Succeeded');
    const [a, b] = r.status.targets ?? [];
    expect([a.name, b.name]).toEqual(['sa', 'sb']);
    expect(a.previous).toEqual({ image: HELLO, replicas: 2 });
    expect(Date.parse(a.finishedAt ?? '')).toBeLessThanOrEqual(Date.parse(b.startedAt ?? ''));
    for (const c of sheets.values()) {
      const pods = (await c.get('pods')).filter((p) => p.deployment === 'web');
      expect(pods.map((p) => p.phase)).toEqual(['Running', 'Running']);
      expect((await c.get('deployments')).find((d) => d.name === 'web')?.image).toBe(TICKER);
    }
    const s = await up.cli('rollout', 'status', 'ticker');
    expect(s.stdout).toMatch(/\[#{20}\] 2\/2 changed {2}Succeeded/);
    expect((await up.cli('down')).code).toBe(0);
  }, 600_000);
});

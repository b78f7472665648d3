// `retrokube up FILE --qemu plane,node-a`: the real CLI in its own process runs the plane and one
// node as qemu-system-risc5 and the other node as the TS emulator; judged from the air (the view
// `up` keeps as a passive station): converged, then the QEMU node switched off by the companion
// verb and its pods moved.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';
import { upSession } from '../e2e/up-harness.ts';
import { requireQemu } from './qemu-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-up-qemu-'));
const state = join(dir, 'state');
const env = { ...process.env, RETROKUBE_STATE: state, LOG_LEVEL: 'warn' };
const FILE = `apiVersion: retrokube.io/v1alpha1
kind: OberonKube
metadata:
  name: mixed
spec:
  nodes: 2
  cluster: kube
  deployments: "web 4 Ticker"
`;

const bin = requireQemu();
const suite = bin === null ? describe.skip : describe.sequential;

const { cli, until, start, stop } = upSession(state, env);

suite('retrokube up --qemu: QEMU machines in a local cluster', () => {
  beforeAll(async () => {
    writeFileSync(join(dir, 'mixed.yaml'), FILE);
    await buildKubeDisk();
  }, 300_000);
  afterAll(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a machine name that is not in the cluster', async () => {
    const r = await cli(
      'up',
      join(dir, 'mixed.yaml'),
      '--no-view',
      '--qemu',
      'node-z',
      '--qemu-binary',
      bin as string,
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--qemu: no machine node-z in this cluster \(machines: plane, node-a, node-b\)/);
  });

  it('converges with the plane and node-a in QEMU, and fails over when node-a is switched off', async () => {
    start([
      join(dir, 'mixed.yaml'),
      '--no-view',
      '--no-vnc',
      '--no-console',
      '--qemu',
      'plane,node-a',
      '--qemu-binary',
      bin as string,
    ]);
    const ms = await until(
      (v) => v.converged && v.running === 4 && v.readyNodes === 2,
      120_000,
      'converged(4)',
    );
    console.log(`up --qemu: converged(4) heard ${(ms / 1000).toFixed(1)} s after start`);
    expect((await cli('machine', 'off', 'node-a')).code).toBe(0);
    const f = await until(
      (v) => v.running === 4 && (v.nodes.find((n) => n.name === 'node-b')?.running.length ?? 0) === 4,
      60_000,
      'all 4 pods on node-b',
    );
    console.log(`up --qemu: QEMU node-a off, its pods on node-b ${(f / 1000).toFixed(1)} s later`);
  }, 240_000);
});

// A running plane takes its desired deployments from a file (in a pod: a mounted ConfigMap) and
// carries out a change as a real rolling update heard on the air, without a restart: the plane is
// a real `retrokube machine run --live-commands` process, the nodes emulated machines, the verdict
// the listener's.
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeCluster } from './kube-harness.ts';

const NODES = ['node-a', 'node-b'];
const CLI = join(import.meta.dirname, '../../operator/src/cli/main.ts');
let c: KubeCluster;
let plane: ChildProcess;
let stderr = '';
let file: string;

beforeAll(async () => {
  c = await KubeCluster.start({ nodes: NODES });
  await c.off('plane');
  file = join(c.diskOf('plane'), '..', 'deployments');
  writeFileSync(file, 'Kube.Apply web 2 Ticker\nSystem.Halt\n');
  plane = spawn(
    process.execPath,
    [
      CLI,
      'machine',
      'run',
      c.diskOf('plane'),
      '--in-place',
      '--air',
      `127.0.0.1:${c.relay.address.port}`,
      '--commands',
      `Kube.Start;KubeNet.Serve ${c.cluster} ${c.key}`,
      '--live-commands',
      file,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  plane.stderr?.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
});

afterAll(async () => {
  plane?.kill('SIGTERM');
  await c?.close();
});

const images = () => [...c.view().running.values()].flat().map((id) => c.listener.airView.imageOf(id));

describe('live deployments for a running plane', () => {
  it('the deployments in the file run, and a line that is not Kube.Apply is refused', async () => {
    await c.wait(
      () => c.converged(2, NODES) && images().every((i) => i === 'Ticker'),
      90_000,
      'web 2 Ticker',
    );
    expect(stderr).toMatch(
      /refused 1 line\(s\) that are not "Kube.Apply name N Module" or "Kube.Hold N": System.Halt/,
    );
  });

  it('a changed line becomes a rolling update on the same plane process', async () => {
    const pid = plane.pid;
    writeFileSync(file, 'Kube.Apply web 3 Ticker2\n');
    await c.wait(
      () => c.converged(3, NODES) && images().length === 3 && images().every((i) => i === 'Ticker2'),
      90_000,
      'web 3 Ticker2',
    );
    expect(plane.exitCode).toBeNull();
    expect(plane.pid).toBe(pid);
  });
});

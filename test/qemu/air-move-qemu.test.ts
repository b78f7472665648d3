// The QEMU radio when the relay really goes away (qemu/graft.py's two UDP chardev fixes): a plane
// and a node in qemu-system-risc5 reach the air by a host name. First the relay's socket is
// closed for 8 s and opened again on the same address: every frame a machine sends meanwhile
// comes back as ICMP port-unreachable, which turns a later read into ECONNREFUSED (upstream QEMU
// then stops reading the air for good: fix 1 keeps the read watch). Then the relay goes away
// and comes back at another address, and the name now resolves there: a write to the old
// address fails, and the machine must resolve the name again and connect anew (fix 2). After
// each, the node must both be heard and hear: it runs the pods of a new Kube.Apply, which it
// only learns from the plane's assignments and specs.
//
// The name is resolved through a hosts file of the machines' own: each QEMU runs in a mount
// namespace (unshare -m) with that file bound over /etc/hosts, so the machine's /etc/hosts is
// never touched. Loopback only: 127.0.0.1, then 127.0.0.2.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyFromHex } from '../../operator/src/air/kubenet.ts';
import { type Listener, startListener } from '../../operator/src/air/listen.ts';
import { type Relay, startRelay } from '../../operator/src/air/relay.ts';
import type { FrameRecord } from '../../operator/src/air/view.ts';
import { QemuRunner } from '../../operator/src/machine/qemu-runner.ts';
import { kubeDisk, sleep } from '../e2e/kube-harness.ts';
import { requireQemu } from './qemu-harness.ts';

const KEY = '0123456789abcdef';
const NAME = 'the-air'; // what the machines are given; only their hosts file knows it
const GONE_MS = 8000; // the relay away: every heartbeat and round meanwhile bounces (ICMP)

/** Whether this host lets a test give a process its own /etc/hosts (root and mount namespaces). */
function namespacesWork(): string | null {
  try {
    execFileSync('unshare', ['-m', '--propagation', 'private', 'true'], { stdio: 'ignore' });
    return null;
  } catch (e) {
    return `unshare -m failed (${(e as Error).message.split('\n')[0]}): needs root with CAP_SYS_ADMIN`;
  }
}

const bin = requireQemu();
const noNs = bin === null ? null : namespacesWork();
if (noNs !== null && process.env.CI === 'true') throw new Error(noNs);

const suite = bin === null || noNs !== null ? describe.skip : describe.sequential;
suite(`QEMU radio: the relay goes away and comes back, at the same address and at a new one${bin === null ? ' (qemu-system-risc5 is not built)' : noNs ? ` (${noNs})` : ''}`, () => {
  const records: FrameRecord[] = [];
  const machines = new Map<string, QemuRunner>();
  let dir = '';
  let hosts = '';
  let relay: Relay;
  let listener: Listener;
  let port = 0;

  const point = (address: string) => writeFileSync(hosts, `${address} ${NAME}\n`); // in place: the bind mount sees it
  const open = async (address: string) => {
    relay = await startRelay({ port, bind: address, rate: null });
    port = relay.address.port;
    listener = await startListener({
      host: address,
      port,
      cluster: 'kube',
      key: keyFromHex(KEY),
      output: 'none',
      onRecord: (r) => records.push(r),
    });
  };
  const away = async () => {
    await listener.close();
    await relay.close();
  };
  const heard = (since: number, kind: 'heartbeat' | 'assign', node: string) =>
    records.filter((r) => r.t >= since && r.verdict === 'ok' && r.kind === kind && r.node === node);
  const running = (since: number) => heard(since, 'heartbeat', 'node-a').at(-1)?.ids ?? [];
  const until = async (test: () => boolean, ms: number, what: string) => {
    const t0 = Date.now();
    while (!test()) {
      if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms / 1000} s`);
      await sleep(500);
    }
    return Date.now() - t0;
  };
  /** Kube.Apply on the plane; the node must run exactly that many pods, as heard on the air. */
  const applied = async (n: number, what: string) => {
    const t = Date.now();
    machines.get('plane')?.serialFeed(`Kube.Apply web ${n} Ticker;`);
    return until(() => running(t).length === n, 60_000, `node-a runs ${n} pods ${what}`);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'retrokube-air-move-'));
    hosts = join(dir, 'hosts');
    point('127.0.0.1');
    // Same pid as QEMU (unshare and sh exec), so QemuRunner's power-off still kills QEMU.
    const wrapper = join(dir, 'qemu-with-hosts.sh');
    writeFileSync(
      wrapper,
      `#!/bin/sh\nexec unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' '${hosts}' '${bin}' "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    await open('127.0.0.1');
    const disk = await kubeDisk();
    for (const [name, commands] of [
      ['plane', `Kube.Start;KubeNet.Serve kube ${KEY}`],
      ['node-a', `KubeNet.Join node-a kube ${KEY}`],
    ]) {
      const d = join(dir, `${name}.dsk`);
      copyFileSync(disk, d);
      machines.set(
        name,
        await QemuRunner.start({ qemu: wrapper, disk: d, commands, air: { host: NAME, port } }),
      );
    }
    await until(
      () => heard(0, 'heartbeat', 'node-a').length > 0 && heard(0, 'assign', 'node-a').length > 0,
      60_000,
      'node-a heard and assigned',
    );
    await applied(2, 'at first');
  }, 180_000);

  afterAll(async () => {
    await Promise.all([...machines.values()].map((m) => m.stop()));
    await listener?.close();
    await relay?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The relay away for GONE_MS and back at `address`; the node then runs `pods` pods. */
  const comesBack = async (address: string, pods: number, what: string) => {
    await away();
    point(address);
    await sleep(GONE_MS);
    const back = Date.now();
    await open(address);
    const ms = await applied(pods, `after the relay came back at ${address}`);
    console.log(
      `air move: ${what}, node-a runs ${pods} pods ${(ms / 1000).toFixed(1)} s after the relay returned`,
    );
    expect(heard(back, 'heartbeat', 'node-a').length).toBeGreaterThan(0);
    expect(heard(back, 'assign', 'node-a').length).toBeGreaterThan(0);
  };

  it(
    'the relay closed for 8 s and opened again at the same address: both machines hear the air again',
    () => comesBack('127.0.0.1', 3, 'same address'),
    120_000,
  );

  it(
    'the relay gone and back at a new address (the name now resolves there): both machines move to it',
    () => comesBack('127.0.0.2', 4, 'new address'),
    120_000,
  );
});

// Our KubeVirt hook (images/virt-launcher/onDefineDomain.py) and our QEMU together: the
// hook rewrites a KubeVirt-shaped domain for the OberonMachine our operator renders, and the
// emulator arguments it writes into <qemu:commandline> boot qemu-system-risc5 to Oberon.Loop.
// QEMU is started here by hand; libvirt-domain.test.ts starts the hook's domain under a real
// libvirtd with virsh.

import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  descriptor,
  machineSettings,
  type OberonMachine,
} from '../../operator/src/controllers/oberonmachine-render.ts';
import { HOOK, kubevirtDomain } from './kubevirt-domain.ts';
import { BASE_DISK, Qmp, requireQemu, until, writeProm } from './qemu-harness.ts';

const bin = requireQemu();
const suite = bin === null ? describe.skip : describe;

const node: OberonMachine = {
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonMachine',
  metadata: { name: 'node1', namespace: 'lab', uid: 'u2' },
  spec: { role: 'node', nodeName: 'n1', cluster: 'kube', commands: 'System.Directory *.Tool' },
};

suite("our onDefineDomain hook's domain boots our QEMU", () => {
  const dir = mkdtempSync(join(tmpdir(), 'retrokube-hook-qemu-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const hook = (vmi: unknown) =>
    spawnSync('python3', [HOOK, '--vmi', JSON.stringify(vmi), '--domain', kubevirtDomain()], {
      encoding: 'utf8',
    });

  it('the rewritten domain names risc5/oberon and its QEMU arguments boot to Oberon.Loop', async () => {
    writeProm(dir);
    copyFileSync(BASE_DISK, join(dir, 'oberon.dsk'));
    const desc = descriptor(machineSettings(node));
    const d = { ...desc, payload: { ...(desc.payload as object), path: dir } };
    const r = hook({ metadata: { annotations: { 'paleocomputing.io/machine': JSON.stringify(d) } } });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/<type arch="risc5" machine="oberon">/);
    expect(r.stdout).toContain('<emulator>/usr/local/bin/qemu-system-risc5</emulator>');
    const args = [...r.stdout.matchAll(/<qemu:arg value="([^"]*)"/g)].map((m) =>
      m[1].replaceAll('&amp;', '&'),
    );
    expect(args.slice(0, 4)).toEqual([
      '-bios',
      `${dir}/prom.bin`,
      '-drive',
      `if=none,id=sd0,file=${dir}/oberon.dsk,format=raw`,
    ]);

    // libvirt would add -machine oberon,... -m, -name and a VNC socket; these are the parts it
    // passes through from <os>, <memory>, <graphics> and the hook's <qemu:commandline>.
    const qmpPath = join(dir, 'qmp.sock');
    const vncPath = join(dir, 'virt-vnc');
    const p = spawn(
      bin as string,
      [
        '-machine',
        'oberon',
        '-m',
        '128M',
        '-name',
        'guest=lab_oberon-node1',
        ...args,
        '-display',
        'none',
        '-vnc',
        `unix:${vncPath}`,
        '-qmp',
        `unix:${qmpPath},server=on,wait=off`,
      ],
      { stdio: 'ignore' },
    );
    try {
      const q = await Qmp.connect(qmpPath);
      await until('Oberon.Loop', () => q.prop<boolean>('booted'), 120_000);
      q.close();
    } finally {
      p.kill('SIGKILL');
    }
  });

  it('refuses a VMI that is not a RISC5 machine, with no output', () => {
    const r = hook({ metadata: { annotations: {} } });
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/annotation paleocomputing.io\/machine is missing/);
    const bad = descriptor(machineSettings(node));
    const notRisc5 = { ...bad, domain: { ...(bad.domain as object), emulator: 'qemu-system-x86_64' } };
    const r2 = hook({ metadata: { annotations: { 'paleocomputing.io/machine': JSON.stringify(notRisc5) } } });
    expect(r2.status).not.toBe(0);
    expect(r2.stdout).toBe('');
    expect(r2.stderr).toMatch(/emulator is not an absolute path/);
  });
});

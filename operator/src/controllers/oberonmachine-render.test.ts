import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  descriptor,
  machineSettings,
  type OberonMachine,
  renderPod,
  STATUS_DIR,
  STATUS_FILE,
} from './oberonmachine-render.ts';

const HOOK = fileURLToPath(new URL('../../../images/virt-launcher/onDefineDomain.py', import.meta.url));
const python = spawnSync('python3', ['--version']).status === 0;
// A developer machine without python3 skips the hook's process tests; CI must run them.
if (!python && process.env.CI)
  throw new Error(
    'python3 is needed to test the onDefineDomain hook: install it (the set-up of npm test does)',
  );

const plane: OberonMachine = {
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonMachine',
  metadata: { name: 'p', namespace: 'lab', uid: 'u1' },
  spec: {
    air: 'lab',
    role: 'plane',
    cluster: 'kube',
    keySecretRef: { name: 's', key: 'key' },
    commands: 'Kube.Ensure web 4 Ticker;Say a,b',
  },
};

const DOMAIN = `<domain type="kvm"><name>x</name><os firmware="efi"><type arch="x86_64" machine="q35">hvm</type><loader>/x</loader><smbios mode="sysinfo"/></os>
<sysinfo type="smbios"/><features><acpi/></features><cpu mode="host-model"/><vcpu placement="static" current="1">2</vcpu>
<devices><emulator>/usr/bin/qemu-kvm</emulator><disk type="file"/><interface type="ethernet"/><graphics type="vnc"/><graphics type="spice"/><serial/></devices></domain>`;

describe('OberonMachine renders', () => {
  it('a pod machine never carries the key: `machine run` expands $(RK_KEY) from the Secret, escaped from the kubelet', () => {
    const { statefulSet } = renderPod(plane, machineSettings(plane), 'img');
    const text = JSON.stringify(statefulSet);
    // "$$" reaches the container as "$": the key is checked as hex by machine run before use (#17.9)
    expect(text).toContain('Kube.Start;KubeNet.Serve kube $$(RK_KEY);Kube.Ensure web 4 Ticker');
    expect(text).toContain('"secretKeyRef":{"name":"s","key":"key"}');
  });
});

describe('#17.4 machine VNC in pods', () => {
  const args = (vnc?: { expose?: boolean }): string[] => {
    const m: OberonMachine = { ...plane, spec: { ...plane.spec, vnc } };
    // biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
    return (renderPod(m, machineSettings(m), 'img').statefulSet.spec as any).template.spec.containers[0].args;
  };
  it('listens on loopback by default (kubectl port-forward reaches it) and on the pod address only when exposed', () => {
    const host = (a: string[]) => a[a.indexOf('--vnc-host') + 1];
    expect(host(args())).toBe('127.0.0.1');
    expect(host(args({ expose: false }))).toBe('127.0.0.1');
    expect(host(args({ expose: true }))).toBe('0.0.0.0');
  });

  it('a VNC password comes from the Secret through the kubelet (RK_VNC_PASSWORD), never in the spec or args', () => {
    const m: OberonMachine = {
      ...plane,
      spec: { ...plane.spec, vnc: { passwordSecretRef: { name: 'vnc' } } },
    };
    // biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
    const c = (renderPod(m, machineSettings(m), 'img').statefulSet.spec as any).template.spec.containers[0];
    expect(c.env).toContainEqual({
      name: 'RK_VNC_PASSWORD',
      valueFrom: { secretKeyRef: { name: 'vnc', key: 'password' } },
    });
  });
});

describe("the machine pod is ready on the emulator's own word", () => {
  // biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
  const pod = (renderPod(plane, machineSettings(plane), 'img').statefulSet.spec as any).template.spec;
  const machine = pod.containers[0];

  it('the emulator keeps its status file on a small memory emptyDir, VNC stays exposed, no token is mounted', () => {
    expect(machine.args).toContain('--status-file');
    expect(machine.args[machine.args.indexOf('--status-file') + 1]).toBe(STATUS_FILE);
    expect(machine.volumeMounts).toContainEqual({ name: 'status', mountPath: STATUS_DIR });
    expect(pod.volumes).toEqual([{ name: 'status', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }]);
    expect(machine.ports).toEqual([{ name: 'vnc', containerPort: 5900, protocol: 'TCP' }]);
    expect(machine.readinessProbe.exec.command.slice(0, 2)).toEqual(['sh', '-c']);
    expect(machine.readinessProbe.tcpSocket).toBeUndefined();
    expect(pod.automountServiceAccountToken).toBe(false);
  });

  it('the probe (run by /bin/sh for real) prints the first status line and passes only on "booted:"', () => {
    const dir = mkdtempSync(join(tmpdir(), 'probe-'));
    // The probe's command as the kubelet runs it, with the status mount at a temporary folder.
    const script = (machine.readinessProbe.exec.command[2] as string).replaceAll(STATUS_DIR, dir);
    expect(script).not.toMatch(/\bnode\b/); // a shell builtin, not a node process per probe
    const probe = () =>
      spawnSync(machine.readinessProbe.exec.command[0], ['-c', script], { encoding: 'utf8' });
    let r = probe();
    expect([r.status, r.stdout, r.stderr]).toEqual([
      1,
      `starting: the emulator has not written ${dir}/status yet\n`,
      '',
    ]);
    writeFileSync(join(dir, 'status'), 'booting: 1.2 M instructions, 0.2 s since power-on\nphase: booting\n');
    r = probe();
    expect([r.status, r.stdout]).toEqual([1, 'booting: 1.2 M instructions, 0.2 s since power-on\n']);
    writeFileSync(
      join(dir, 'status'),
      'booted: Oberon.Loop reached at 2026-11-29T12:30:01Z\nphase: booted\n',
    );
    r = probe();
    expect([r.status, r.stdout]).toEqual([0, 'booted: Oberon.Loop reached at 2026-11-29T12:30:01Z\n']);
    writeFileSync(join(dir, 'status'), 'trouble: relay rk-air-lab unresolvable since 2026-11-29T12:30:15Z\n');
    r = probe();
    expect([r.status, r.stdout]).toEqual([
      1,
      'trouble: relay rk-air-lab unresolvable since 2026-11-29T12:30:15Z\n',
    ]);
    writeFileSync(join(dir, 'status'), 'stopped: SIGTERM at 2026-11-29T12:40:00Z\n');
    expect(probe().status).toBe(1);
  });
});

describe.runIf(python)('our onDefineDomain hook (python3, a real process)', () => {
  // The hook goes on only once the relay's name resolves: `localhost` stands in for rk-air-lab,
  // which has no Service here.
  const HERE = { host: 'localhost', port: 7524 };
  const run = (payload: string, key?: string, domain = DOMAIN, air: object = HERE) => {
    if (key !== undefined) writeFileSync(join(payload, 'key'), `${key}\n`);
    const rendered = descriptor(machineSettings(plane));
    expect(rendered.air).toEqual({ host: 'rk-air-lab', port: 7524 });
    const desc = { ...rendered, air, payload: { ...(rendered.payload as object), path: payload } };
    const vmi = JSON.stringify({
      metadata: { annotations: { 'paleocomputing.io/machine': JSON.stringify(desc) } },
    });
    return spawnSync('python3', [HOOK, '--vmi', vmi, '--domain', domain], { encoding: 'utf8' });
  };
  const withSerial = (path: string) =>
    DOMAIN.replace(
      '<serial/>',
      `<serial type="unix"><target port="0"/><source mode="bind" path="${path}"/></serial>`,
    );

  it('refuses with no output while the machine files are not on the volume', () => {
    const r = run(mkdtempSync(join(tmpdir(), 'hook-')));
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/machine files are not on the volume yet/);
  });

  it('rewrites the domain for risc5/oberon: qemu type, no PCI devices, VNC kept, our QEMU args with the key from the volume', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hook-'));
    writeFileSync(join(dir, 'prom.bin'), 'x');
    writeFileSync(join(dir, 'oberon.dsk'), 'x');
    const r = run(dir, '00c0ffee00c0ffee');
    expect(r.stderr).toBe('');
    const xml = r.stdout;
    expect(xml).toMatch(/<domain[^>]* type="qemu"/);
    expect(xml).toMatch(/<type arch="risc5" machine="oberon">/);
    expect(xml).not.toMatch(/<loader|<smbios|<features|<cpu|<disk|<interface|<serial|spice|firmware=/);
    expect(xml).toContain('<sysinfo type="smbios" />');
    expect(xml).toContain('<vcpu>1</vcpu>');
    expect(xml).toContain('<emulator>/usr/local/bin/qemu-system-risc5</emulator>');
    expect(xml).toContain('<graphics type="vnc" />');
    const args = [...xml.matchAll(/<qemu:arg value="([^"]*)"/g)].map((m) => m[1]);
    expect(args).toEqual([
      '-bios',
      `${dir}/prom.bin`,
      '-drive',
      `if=none,id=sd0,file=${dir}/oberon.dsk,format=raw`,
      '-chardev',
      'udp,id=air,host=localhost,port=7524,localaddr=0.0.0.0,localport=7524',
      '-machine',
      'radio=air',
      '-machine',
      'commands=Kube.Start;KubeNet.Serve kube 00c0ffee00c0ffee;Kube.Ensure web 4 Ticker;Say a,,b',
    ]);
    expect(
      execFileSync('python3', ['-c', 'import sys,xml.dom.minidom as m; m.parseString(sys.stdin.read())'], {
        input: xml,
      }).length,
    ).toBe(0);
  });

  it("waits for the relay's name to resolve, then refuses with no output (QEMU would exit on it; KubeVirt retries a refusal)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'hook-'));
    writeFileSync(join(dir, 'prom.bin'), 'x');
    writeFileSync(join(dir, 'oberon.dsk'), 'x');
    const started = performance.now();
    const r = run(dir, '00c0ffee00c0ffee', DOMAIN, {
      host: 'rk-air-gone.invalid',
      port: 7524,
      resolveWithinSeconds: 2,
    });
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /the relay rk-air-gone\.invalid does not resolve \(.*\) after 2 s: is its OberonAir Ready\?/,
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_000); // it tried more than once
    for (const bad of [-1, 51, 1.5, true, '5']) {
      const refused = run(dir, '00c0ffee00c0ffee', DOMAIN, { ...HERE, resolveWithinSeconds: bad });
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toMatch(/air.resolveWithinSeconds must be 0..50/);
    }
  });

  it("wires KubeVirt's serial console socket to the board's RS-232 (virtctl console, live lines); refuses an odd path", () => {
    const dir = mkdtempSync(join(tmpdir(), 'hook-'));
    writeFileSync(join(dir, 'prom.bin'), 'x');
    writeFileSync(join(dir, 'oberon.dsk'), 'x');
    const sock = '/var/run/kubevirt-private/6a1c0a2e/virt-serial0';
    const r = run(dir, '00c0ffee00c0ffee', withSerial(sock));
    expect(r.stderr).toBe('');
    expect(r.stdout).not.toMatch(/<serial/); // QEMU's own chardev, not libvirt's device
    const args = [...r.stdout.matchAll(/<qemu:arg value="([^"]*)"/g)].map((m) => m[1]);
    const at = args.indexOf(`socket,id=serial0,path=${sock},server=on,wait=off`);
    expect(args.slice(at - 1, at + 3)).toEqual([
      '-chardev',
      `socket,id=serial0,path=${sock},server=on,wait=off`,
      '-serial',
      'chardev:serial0',
    ]);
    for (const bad of ['/run/x,server=off/s', '/run/../etc/s']) {
      const refused = run(dir, '00c0ffee00c0ffee', withSerial(bad));
      expect(refused.status).not.toBe(0);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(/serial console socket .* is not a plain path/);
    }
  });
});

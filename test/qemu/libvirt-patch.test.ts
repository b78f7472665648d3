// The libvirt patch (qemu/libvirt/patch_libvirt.py) on Debian bookworm's real libvirt source:
// every edit lands once and in the right place, a second run changes nothing, and a source whose
// anchor moved is refused with the file named instead of being patched blindly.

import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from './qemu-harness.ts';

const PATCH = join(REPO, 'qemu/libvirt/patch_libvirt.py');
const FILES = [
  'src/util/virarch.h',
  'src/util/virarch.c',
  'src/qemu/qemu_capabilities.c',
  'src/qemu/qemu_domain.c',
];

function libvirtSource(): string | null {
  const r = spawnSync('bash', [join(REPO, 'qemu/libvirt/source.sh')], { encoding: 'utf8' });
  if (r.status === 0) return r.stdout.trim();
  if (process.env.CI === 'true') throw new Error(`Debian's libvirt source is not available: ${r.stderr}`);
  return null;
}

const source = libvirtSource();
const suite = source === null ? describe.skip : describe;

suite('the libvirt patch: architecture risc5, default machine oberon, no PCI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'retrokube-libvirt-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const tree = (name: string) => {
    const t = join(dir, name);
    for (const f of FILES) cpSync(join(source as string, f), join(t, f));
    return t;
  };
  const patch = (t: string, ...extra: string[]) =>
    spawnSync('python3', [PATCH, ...extra, t], { encoding: 'utf8' });

  it('applies every edit once, next to its RISC-V neighbour, and a second run changes nothing', () => {
    const t = tree('a');
    expect(patch(t, '--dry-run').stdout).toMatch(/6 edit\(s\) would be applied/);
    expect(readFileSync(join(t, FILES[0]), 'utf8')).not.toContain('VIR_ARCH_RISC5');
    expect(patch(t).stdout).toMatch(/6 edit\(s\) applied/);
    const arch = readFileSync(join(t, 'src/util/virarch.h'), 'utf8');
    expect(arch).toMatch(/VIR_ARCH_RISC5,[^\n]*\n\s+VIR_ARCH_RISCV32,/);
    expect(readFileSync(join(t, 'src/util/virarch.c'), 'utf8')).toMatch(
      /"risc5",\s+32, VIR_ARCH_LITTLE_ENDIAN/,
    );
    const caps = readFileSync(join(t, 'src/qemu/qemu_capabilities.c'), 'utf8');
    expect(caps).toMatch(/"oberon", \/\* VIR_ARCH_RISC5 \*\/\n\s+"spike_v1.10", \/\* VIR_ARCH_RISCV32/);
    const dom = readFileSync(join(t, 'src/qemu/qemu_domain.c'), 'utf8');
    expect(dom).toMatch(
      /qemuDomainSupportsPCI\([^)]*\)\n\{\n\s+if \(def->os.arch == VIR_ARCH_RISC5\)\n\s+return false;/,
    );
    const before = FILES.map((f) => readFileSync(join(t, f), 'utf8'));
    expect(patch(t).stdout).toMatch(/0 edit\(s\) applied/);
    expect(FILES.map((f) => readFileSync(join(t, f), 'utf8'))).toEqual(before);
    // The enum and the name table grow together (libvirt asserts their sizes agree at build).
    const count = (file: string, re: RegExp, tr: string) =>
      (readFileSync(join(tr, file), 'utf8').match(re) ?? []).length;
    const enumRe = /^ {4}VIR_ARCH_[A-Z0-9_]+,/gm;
    const tableRe = /^ {4}\{ "[a-z0-9_]+",/gm;
    const src = source as string;
    expect(count('src/util/virarch.h', enumRe, t)).toBe(count('src/util/virarch.h', enumRe, src) + 1);
    expect(count('src/util/virarch.c', tableRe, t)).toBe(count('src/util/virarch.c', tableRe, src) + 1);
  });

  it('refuses a source whose anchor is not there, naming the file, and writes nothing', () => {
    const t = tree('b');
    const f = join(t, 'src/qemu/qemu_domain.c');
    writeFileSync(
      f,
      readFileSync(f, 'utf8').replace(
        'qemuDomainSupportsPCI(virDomainDef *def,',
        'qemuDomainHasPCI(virDomainDef *def,',
      ),
    );
    const r = patch(t);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/src\/qemu\/qemu_domain.c: anchor not found exactly once/);
    expect(readFileSync(f, 'utf8')).not.toContain('RISC5');
    expect(readFileSync(join(t, 'src/util/virarch.h'), 'utf8')).not.toContain('RISC5');
  });
});

import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fillPayload, PAYLOAD_LIMITS } from './payload.ts';
import { romBytes } from './qemu-runner.ts';

function seedFile(bytes = 1024): { path: string; calls: number; seedDisk: () => Promise<string> } {
  const path = join(mkdtempSync(join(tmpdir(), 'rk-seed-')), 'kube.dsk');
  writeFileSync(path, Buffer.alloc(bytes, 7));
  const s = {
    path,
    calls: 0,
    seedDisk: async () => {
      s.calls++;
      return path;
    },
  };
  return s;
}

describe('machine payload (the fill Job of runtime kubevirt)', () => {
  it('writes our boot ROM, seeds the disk once, grows it, keeps what Oberon wrote', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-payload-'));
    const seed = seedFile();
    expect(await fillPayload(dir, { seedDisk: seed.seedDisk, key: ' 00C0ffee\n' })).toEqual({
      seeded: true,
      grown: true,
      key: true,
    });
    expect(readFileSync(join(dir, 'prom.bin'))).toEqual(romBytes());
    expect(romBytes().length).toBeGreaterThan(0);
    expect(romBytes().length).toBeLessThanOrEqual(2048); // the board's ROM window
    expect(statSync(join(dir, 'oberon.dsk')).size).toBe(PAYLOAD_LIMITS.diskBytes);
    expect(readFileSync(join(dir, 'key'), 'utf8')).toBe('00c0ffee');
    expect(statSync(join(dir, 'key')).mode & 0o777).toBe(0o640);
    expect(statSync(join(dir, 'oberon.dsk')).mode & 0o777).toBe(0o664);
    // The machine wrote to its disk; a second fill (a new Job) keeps it and drops a removed key.
    const disk = readFileSync(join(dir, 'oberon.dsk'));
    disk[5000] = 42;
    writeFileSync(join(dir, 'oberon.dsk'), disk);
    writeFileSync(join(dir, 'prom.bin'), 'stale');
    expect(await fillPayload(dir, { seedDisk: seed.seedDisk })).toEqual({
      seeded: false,
      grown: false,
      key: false,
    });
    expect(seed.calls).toBe(1);
    expect(readFileSync(join(dir, 'oberon.dsk'))[5000]).toBe(42);
    expect(readFileSync(join(dir, 'prom.bin'))).toEqual(romBytes());
    expect(() => statSync(join(dir, 'key'))).toThrow();
  });

  it('never shrinks a bigger disk and refuses a key that is not hex, writing nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-payload-'));
    const big = seedFile(PAYLOAD_LIMITS.diskBytes + 4096);
    await fillPayload(dir, { seedDisk: big.seedDisk });
    expect(statSync(join(dir, 'oberon.dsk')).size).toBe(PAYLOAD_LIMITS.diskBytes + 4096);
    const empty = mkdtempSync(join(tmpdir(), 'rk-payload-'));
    await expect(fillPayload(empty, { seedDisk: big.seedDisk, key: '00;System.Quit' })).rejects.toThrow(
      /not 0-16 hex digits/,
    );
    expect(() => statSync(join(empty, 'prom.bin'))).toThrow();
  });
});

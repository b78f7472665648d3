// Boot images kept on disk between processes (boot-image.ts says what an image is and why one
// is exact): the first machine of a fresh `retrokube up` or `machine run` starts from the image
// an earlier process recorded, as later machines of one process do. An image is still checked
// against the machine's configuration and disk blocks before use, so a stale file costs a real
// boot, never a wrong machine. A file written by another version of the emulator's code is never
// read: an image is what *that* code's boot produced, and a fix to the CPU or a device would
// otherwise live on in it. RETROKUBE_BOOT_IMAGES=off turns the store off, =<folder> moves it.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { defaultCacheDir } from './base-image.ts';
import type { BootImage } from './boot-image.ts';
import { sourceVersion } from './source-version.ts';

export const LIMITS = {
  files: 8, // images kept in the folder (the newest by modification time); older ones are deleted
  maxFileBytes: 64 << 20, // a file larger than this is not an image of ours (32 MiB RAM at most)
  magic: 'retrokube-boot-image-2', // first field of the header: the format (2: with the code version)
} as const;

/**
 * The emulator's code version: machine.ts and every module it imports (the CPU, translator, FPU,
 * devices, boot code; source-version.ts). Null when the sources cannot be read: the store is off.
 */
export function emulatorVersion(): string | null {
  return sourceVersion('machine.ts');
}

export function bootImageDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const v = env.RETROKUBE_BOOT_IMAGES;
  if (v === 'off' || emulatorVersion() === null) return null;
  return v !== undefined && v.length > 0 ? v : path.join(defaultCacheDir(env), 'boot-images');
}

/** File layout: header length (4 bytes LE), JSON header, the RAM bytes, the blocks read. */
function encode(image: BootImage, codeVersion: string): Buffer {
  const { ram, readData, cpu, devices, ...rest } = image;
  const header = Buffer.from(
    JSON.stringify({
      magic: LIMITS.magic,
      codeVersion,
      ramBytes: ram.length,
      ...rest,
      cpu: { ...cpu, R: Array.from(cpu.R) },
      devices: {
        ...devices,
        sd: {
          ...devices.sd,
          cmd: Array.from(devices.sd.cmd),
          tx: Array.from(devices.sd.tx),
          rx: Array.from(devices.sd.rx),
        },
      },
    }),
  );
  const len = Buffer.alloc(4);
  len.writeUInt32LE(header.length);
  return Buffer.concat([len, header, ram, readData]);
}

function decode(file: Buffer, codeVersion: string): BootImage {
  const n = file.readUInt32LE(0);
  const h = JSON.parse(file.subarray(4, 4 + n).toString('utf8'));
  if (h.magic !== LIMITS.magic) throw new Error('not a boot image of this format');
  if (h.codeVersion !== codeVersion) throw new Error('a boot image of another emulator version');
  const { magic: _m, ramBytes: _r, codeVersion: _v, ...rest } = h;
  if (file.length !== 4 + n + h.ramBytes + rest.reads.length * 512) throw new Error('truncated boot image');
  return {
    ...rest,
    cpu: { ...h.cpu, R: Int32Array.from(h.cpu.R) },
    devices: {
      ...h.devices,
      sd: {
        ...h.devices.sd,
        cmd: Uint8Array.from(h.devices.sd.cmd),
        tx: Int32Array.from(h.devices.sd.tx),
        rx: Int32Array.from(h.devices.sd.rx),
      },
    },
    ram: new Uint8Array(file.subarray(4 + n, 4 + n + h.ramBytes)),
    readData: new Uint8Array(file.subarray(4 + n + h.ramBytes)),
  } as BootImage;
}

/** File names carry the code version: another version's files are not even opened. */
const fileSuffix = (codeVersion: string) => `-${codeVersion}.img`;

/**
 * The stored images of this code version (`codeVersion`: tests name another), newest first;
 * unreadable files and those of other versions are skipped.
 */
export function loadBootImages(dir: string | null, codeVersion = emulatorVersion()): BootImage[] {
  if (dir === null || codeVersion === null) return [];
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith(fileSuffix(codeVersion)));
  } catch {
    return [];
  }
  const files = names
    .map((n) => {
      const p = path.join(dir, n);
      try {
        const st = fs.statSync(p);
        return { p, mtime: st.mtimeMs, size: st.size };
      } catch {
        return null;
      }
    })
    .filter(
      (f): f is { p: string; mtime: number; size: number } => f !== null && f.size <= LIMITS.maxFileBytes,
    )
    .sort((a, b) => b.mtime - a.mtime)
    .slice(0, LIMITS.files);
  const out: BootImage[] = [];
  for (const f of files) {
    try {
      out.push(decode(fs.readFileSync(f.p), codeVersion));
    } catch {
      // A partial or foreign file: not an image.
    }
  }
  return out;
}

/**
 * Store an image as this code version's (`codeVersion`: tests name another), atomically (a temp
 * file renamed into place), and trim the folder (all versions together). Best effort.
 */
export function saveBootImage(dir: string | null, image: BootImage, codeVersion = emulatorVersion()): void {
  if (dir === null || codeVersion === null) return;
  try {
    fs.mkdirSync(dir, { recursive: true });
    const name = createHash('sha256').update(image.key).update(image.readsHash).digest('hex').slice(0, 32);
    const file = path.join(dir, `${name}${fileSuffix(codeVersion)}`);
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    fs.writeFileSync(tmp, encode(image, codeVersion));
    fs.renameSync(tmp, file);
    const stored = fs
      .readdirSync(dir)
      .filter((n) => n.endsWith('.img'))
      .map((n) => ({ p: path.join(dir, n), mtime: fs.statSync(path.join(dir, n)).mtimeMs }))
      .sort((a, b) => b.mtime - a.mtime);
    for (const old of stored.slice(LIMITS.files)) fs.rmSync(old.p, { force: true });
  } catch {
    // The store is an optimisation: an unwritable cache folder only means real boots.
  }
}

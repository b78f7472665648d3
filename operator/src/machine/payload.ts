// The payload of a KubeVirt machine's volume: what the fill Job (`retrokube machine payload`, run
// from the product image) writes and what our onDefineDomain hook hands QEMU (-bios, -drive):
//   prom.bin    our boot ROM (boot-rom.ts, the board's MemLim/stackOrg), rewritten on every fill
//   oberon.dsk  the Kube disk the pod runtime seeds from (kube-disk.ts), written only when absent,
//               then grown to LIMITS.diskBytes, never shrunk: a disk already there keeps its files
//   key         the KubeNet key (0-16 hex digits, checked), or no file when the machine has none
// Every file is written to a temp name and renamed, so a fill cut short never leaves half a file.
import { chmod, copyFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isKeyHex } from './boot-key.ts';
import { PAYLOAD_FILES, PAYLOAD_LIMITS } from './payload-limits.ts';
import { romBytes } from './qemu-runner.ts';

export { PAYLOAD_FILES, PAYLOAD_LIMITS } from './payload-limits.ts';

export interface FillOptions {
  /** Path of the disk to seed from when the folder has none (called only then). */
  seedDisk: () => Promise<string>;
  /** The key as read from the Secret's file; undefined = the machine has no key (any old one is removed). */
  key?: string;
}

export interface FillResult {
  seeded: boolean;
  grown: boolean;
  key: boolean;
}

async function size(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}

async function place(dir: string, name: string, mode: number, write: (tmp: string) => Promise<void>) {
  const tmp = join(dir, `.${name}.tmp`);
  await write(tmp);
  await chmod(tmp, mode);
  await rename(tmp, join(dir, name));
}

export async function fillPayload(dir: string, o: FillOptions): Promise<FillResult> {
  const key = o.key?.replace(/\s/g, '');
  if (key !== undefined && !isKeyHex(key))
    throw new Error(
      'the key file is not 0-16 hex digits; put only hex digits in the Secret entry keySecretRef names',
    );
  await place(dir, PAYLOAD_FILES.rom, PAYLOAD_LIMITS.fileMode, (tmp) => writeFile(tmp, romBytes()));
  const disk = join(dir, PAYLOAD_FILES.disk);
  let seeded = false;
  if ((await size(disk)) === 0) {
    const from = await o.seedDisk();
    await place(dir, PAYLOAD_FILES.disk, PAYLOAD_LIMITS.fileMode, (tmp) => copyFile(from, tmp));
    seeded = true;
  }
  const grown = (await size(disk)) < PAYLOAD_LIMITS.diskBytes;
  if (grown) await truncate(disk, PAYLOAD_LIMITS.diskBytes);
  if (key !== undefined) {
    await place(dir, PAYLOAD_FILES.key, PAYLOAD_LIMITS.keyMode, (tmp) => writeFile(tmp, key.toLowerCase()));
  } else {
    await rm(join(dir, PAYLOAD_FILES.key), { force: true });
  }
  return { seeded, grown, key: key !== undefined };
}

// The payload's limits and file names, apart from payload.ts (the fill Job's code, with the boot ROM
// and the Kube disk builder behind it): the operator's renders read them, and must not load the
// emulator to do so (#32).
import { KUBE_DISK_LIMITS } from './kube-disk-limits.ts';

export const PAYLOAD_LIMITS = {
  diskBytes: KUBE_DISK_LIMITS.diskBytes, // 8 MiB: the FS writes past 1 MB (Kube's store, new files)
  fileMode: 0o664, // QEMU in the launcher pod (group qemu) writes the disk
  keyMode: 0o640, // read by the hook (group qemu), by nobody else
} as const;

export const PAYLOAD_FILES = { rom: 'prom.bin', disk: 'oberon.dsk', key: 'key' } as const;

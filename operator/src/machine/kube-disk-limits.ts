// The Kube disk's limits, apart from kube-disk.ts (which builds the disk with the whole emulator and
// re-exports them as LIMITS): the operator's renders read the disk size, and must not load the
// emulator to do so (#32).
export const KUBE_DISK_LIMITS = {
  diskBytes: 8 * 1024 * 1024, // each machine's disk: the FS puts new files past the 1-MB base image
  cacheKeyChars: 16, // hex digits of the sha256 in the cached file name: plenty to tell builds apart
} as const;

// A secret a command generated for its user (a cluster token, a VNC password), kept in a file only
// that user reads (0600): read back on the next start, so the user can fetch it ("cat FILE") and
// companion verbs can use it. Never through a link; never one another user made or may read.
import { closeSync, constants, fstatSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';

export const LIMITS = {
  fileBytes: 4096, // a secret file is one short line
} as const;

/** The first line of FILE if it is a private file of ours; null when there is none. */
export function readPrivate(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`cannot open ${file}: ${(e as Error).message} (remove it; a new one is generated)`);
  }
  try {
    const st = fstatSync(fd);
    const uid = process.getuid?.() ?? st.uid;
    if (!st.isFile() || st.uid !== uid || (st.mode & 0o077) !== 0)
      throw new Error(
        `${file} must be a file of yours that only you can read (mode 0600); remove it and a new one is generated`,
      );
    const text = readFileSync(fd, 'utf8').slice(0, LIMITS.fileBytes);
    return (text.split(/\r?\n/)[0] ?? '').trim() || null;
  } finally {
    closeSync(fd);
  }
}

/** Writes VALUE into a new FILE, 0600; an existing file or link there makes it fail (O_EXCL). */
export function writePrivate(file: string, value: string): void {
  const fd = openSync(
    file,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    writeSync(fd, `${value}\n`);
  } finally {
    closeSync(fd);
  }
}

/** FILE's secret if it holds an acceptable one, else a new one from GENERATE, written 0600. */
export function privateSecret(
  file: string,
  generate: () => string,
  acceptable: (v: string) => boolean = () => true,
): string {
  const have = readPrivate(file);
  if (have && acceptable(have)) return have;
  const v = generate();
  if (have) unlinkSync(file); // an unacceptable value of ours: replaced
  writePrivate(file, v);
  return v;
}

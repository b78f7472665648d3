// The token and signing key of a local cluster that runs commands (`sheets up --allow-process`,
// `up --allow-process`): never the reference's well-known token, which every user of the host knows.
// Generated once, kept in two files only the owner reads (0600), read back on the next start so
// skctl and the console keep working with `--token-file`/`--key-file`.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';
import { DEFAULT_TOKEN } from '../default-token.ts';

export const LIMITS = {
  bytes: 24, // 192 bits each, hex: as the operator generates for a SheetCluster
  fileBytes: 4096, // a token file is one short line
} as const;

export interface LocalCredentials {
  token: string;
  key: string;
  tokenFile: string;
  keyFile: string;
}

/** Opens FILE without following a link; refuses one another user owns or may read. */
function readPrivate(file: string): string | null {
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

function writePrivate(file: string, value: string): void {
  // O_EXCL: a file (or link) someone placed there first makes this fail instead of being written through.
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${value}\n`);
  } finally {
    closeSync(fd);
  }
}

function one(file: string): string {
  const have = readPrivate(file);
  if (have && have !== DEFAULT_TOKEN) return have;
  const v = randomBytes(LIMITS.bytes).toString('hex');
  writePrivate(file, v);
  return v;
}

/** The cluster's credentials in `<base>.token` and `<base>.key`: read if there (and private), else generated. */
export function localCredentials(base: string): LocalCredentials {
  const tokenFile = `${base}.token`;
  const keyFile = `${base}.key`;
  return { token: one(tokenFile), key: one(keyFile), tokenFile, keyFile };
}

/** The refusal a command runtime gives the well-known token. */
export const WELL_KNOWN_WITH_COMMANDS =
  'the well-known default token cannot be used while a command runtime (process) is on: every user of this host knows it and could run commands through this cluster. Set TOKEN or --token-file to a secret (sheets up/up --allow-process generate one)';

// The node agent's work folder (pod logs, secret files, finished pods), private to its user (#28.6).
// A root agent writing into a folder another user made could hand that user a secret (a file they
// pre-created and may read) or write through a link they placed. So: the folder is 0700 and ours,
// created fresh or verified; files are opened without following links, created 0600.
import { chmodSync, constants, lstatSync, mkdirSync, mkdtempSync, openSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const LIMITS = {
  dirMode: 0o700, // only the agent's user enters the work folder
  fileMode: 0o600, // pod logs and secret files: only the agent's user reads them
} as const;

const uid = (): number => process.getuid?.() ?? -1;

/** Why DIR is not a private folder of ours, or undefined when it is. */
export function privateProblem(dir: string): string | undefined {
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) return `${dir} is a symbolic link`;
  if (!st.isDirectory()) return `${dir} is not a folder`;
  if (uid() >= 0 && st.uid !== uid())
    return `${dir} belongs to uid ${st.uid}, not to this user (uid ${uid()})`;
  if ((st.mode & 0o077) !== 0)
    return `${dir} may be read or written by others (mode ${(st.mode & 0o777).toString(8)})`;
  return undefined;
}

/** A real folder (not a link) that belongs to this user. */
function ownFolder(dir: string): boolean {
  const st = lstatSync(dir);
  return st.isDirectory() && (uid() < 0 || st.uid === uid());
}

function ensurePrivate(dir: string): string | undefined {
  try {
    mkdirSync(dir, { mode: LIMITS.dirMode });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return privateProblem(dir);
}

/**
 * `PARENT/sk-node-<uid>-<name>`, reused across restarts when it is ours and private; else (someone
 * else made it: never write into it) a fresh `mkdtemp` folder beside it, with a warning.
 */
function privateInside(parent: string, name: string, warn: (line: string) => void): string {
  const fixed = path.join(parent, `sk-node-${uid()}-${name}`);
  const problem = ensurePrivate(fixed);
  if (!problem) return fixed;
  const dir = mkdtempSync(path.join(parent, `sk-node-${name}-`));
  warn(`${problem}: not using it; pod logs and secrets go to ${dir} instead`);
  return dir;
}

/**
 * The work folder (0700, ours): GIVEN when it is a folder of this user (tightened to 0700), else a
 * private folder inside it (a shared folder, or a volume root owns in a pod); by default one in the
 * temporary folder (privateInside).
 */
export function privateWorkDir(
  given: string | undefined,
  name: string,
  warn: (line: string) => void = () => {},
): string {
  let dir: string;
  if (given) {
    const g = path.resolve(given);
    mkdirSync(g, { recursive: true, mode: LIMITS.dirMode });
    if (ownFolder(g)) {
      // a folder of ours that others may enter is tightened: ours to decide
      if (privateProblem(g)) chmodSync(g, LIMITS.dirMode);
      dir = g;
    } else dir = privateInside(g, name, warn); // another user's (or root's volume): a folder of ours in it
  } else dir = privateInside(os.tmpdir(), name, warn);
  for (const sub of ['logs', 'secrets', 'done']) {
    const d = path.join(dir, sub);
    if (ensurePrivate(d) && ownFolder(d)) chmodSync(d, LIMITS.dirMode); // e.g. an older agent's folder
    const problem = privateProblem(d);
    if (problem) throw new Error(`work folder ${dir}: ${problem}; remove it`);
  }
  return dir;
}

/** Opens a pod log for appending: never through a link, created 0600. */
export function openLog(file: string): number {
  return openSync(
    file,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
    LIMITS.fileMode,
  );
}

/** Opens FILE for writing afresh (an old file or link is removed first), created 0600 and exclusive. */
export function openFresh(file: string): number {
  try {
    unlinkSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  return openSync(
    file,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    LIMITS.fileMode,
  );
}

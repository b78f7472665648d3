// The node agent's work folder (pod logs, secret files, finished pods), private to its user (#28.6).
// A root agent writing into a folder another user made could hand that user a secret (a file they
// pre-created and may read) or write through a link they placed. So: the folder is 0700 and ours,
// created fresh or verified; files are opened without following links, created 0600.
import { constants, lstatSync, mkdirSync, mkdtempSync, openSync, unlinkSync } from 'node:fs';
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

function ensurePrivate(dir: string): string | undefined {
  try {
    mkdirSync(dir, { mode: LIMITS.dirMode });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return privateProblem(dir);
}

/**
 * The work folder: GIVEN (created 0700, or refused with the reason if it exists and is not ours and
 * private), or by default `<tmp>/sk-node-<uid>-<name>` — reused across restarts when it is ours and
 * private, else a fresh `mkdtemp` folder (someone else made the default one: never write into it).
 */
export function privateWorkDir(
  given: string | undefined,
  name: string,
  warn: (line: string) => void = () => {},
): string {
  let dir: string;
  if (given) {
    const problem = ensurePrivate(path.resolve(given));
    if (problem)
      throw new Error(
        `--work-dir: ${problem}; give a folder only this user can enter (chmod 700, owned by you)`,
      );
    dir = path.resolve(given);
  } else {
    const fixed = path.join(os.tmpdir(), `sk-node-${uid()}-${name}`);
    const problem = ensurePrivate(fixed);
    if (problem) {
      dir = mkdtempSync(path.join(os.tmpdir(), `sk-node-${name}-`));
      warn(`${problem}: not using it; pod logs and secrets go to ${dir} instead`);
    } else dir = fixed;
  }
  for (const sub of ['logs', 'secrets', 'done']) {
    const problem = ensurePrivate(path.join(dir, sub));
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

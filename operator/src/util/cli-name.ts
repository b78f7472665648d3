// How a person runs `retrokube` here, so that every hint the program prints runs as written.
// Installed (the package's bin on PATH): `retrokube`. From a checkout: the checkout's launcher
// (./retrokube at its root) as seen from the folder the person works in, unless that launcher is
// what PATH finds. `npm start` runs main.ts directly; npm says where the person was in INIT_CWD.
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout's launcher script (absent in an installed package or an image). */
export const CHECKOUT_LAUNCHER = fileURLToPath(new URL('../../../retrokube', import.meta.url));

const real = (p: string): string | null => {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
};

export interface CliWhere {
  env: NodeJS.ProcessEnv;
  cwd: string;
  launcher: string;
}

/** Pure enough to test: the command word for hints, given the environment and the launcher path. */
export function cliNameFor(w: CliWhere): string {
  if (!existsSync(w.launcher)) return 'retrokube';
  const target = real(w.launcher);
  for (const dir of (w.env.PATH ?? '').split(delimiter)) {
    if (dir && target !== null && real(join(dir, 'retrokube')) === target) return 'retrokube';
  }
  const from = w.env.INIT_CWD ?? w.cwd;
  const rel = relative(from, w.launcher);
  if (rel.startsWith(`..${sep}..${sep}..`)) return w.launcher; // far away: the absolute path reads better
  return rel.includes(sep) ? rel : `.${sep}${rel}`;
}

let cached: string | undefined;
/** `retrokube` or e.g. `./retrokube`: prefix of every command the program suggests. */
export function cliName(): string {
  cached ??= cliNameFor({ env: process.env, cwd: resolve(process.cwd()), launcher: CHECKOUT_LAUNCHER });
  return cached;
}

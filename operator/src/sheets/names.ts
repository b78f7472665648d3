// Object names of a spreadsheet cluster (deployments, pods, nodes, secrets). One rule for every
// place a name arrives — an apply, a cell typed into the sheet, an order the node agent receives —
// because names become file names (pod logs, secret files) and container names on the nodes.
import path from 'node:path';

export const LIMITS = {
  nameChars: 253, // a DNS subdomain, as Kubernetes names
} as const;

// Letters, digits, '.', '_' and '-', starting and ending with a letter or digit: never "/", "\",
// "..", a leading "-" or an empty name, so a name is always one safe path component.
const NAME_RE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$/;

export function isObjectName(v: unknown): v is string {
  return typeof v === 'string' && NAME_RE.test(v);
}

/** Why `name` is not an object name, for the error a person reads. */
export function nameProblem(name: string): string {
  return `name ${JSON.stringify(name.slice(0, 64))} must be letters, digits, '.', '_' or '-', starting and ending with a letter or digit (max ${LIMITS.nameChars})`;
}

/**
 * `dir` joined with `parts`, refused unless the result stays inside `dir` — the last check before
 * writing a file whose name came from the sheet, whatever validation ran before.
 */
export function pathInside(dir: string, ...parts: string[]): string {
  const root = path.resolve(dir);
  const p = path.resolve(root, ...parts);
  const rel = path.relative(root, p);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel))
    throw new Error(`refusing path ${JSON.stringify(p)}: it is not inside ${root}`);
  return p;
}

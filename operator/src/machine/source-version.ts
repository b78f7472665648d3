// A version of the machine's code for the caches that outlive a process (boot images, the
// translator's hints and translations): a hash of a module's source and of every module of this
// folder it imports, directly or through others. A cache written by other code is then never
// read, whichever of those files changed. Read from the sources once per entry and process.

import { createHash } from 'node:crypto';
import fs from 'node:fs';

const IMPORT = /from '\.\/([\w.-]+\.ts)'/g;

/** The source of a module of this folder. */
export type SourceReader = (name: string) => string;

const readHere: SourceReader = (name) => fs.readFileSync(new URL(`./${name}`, import.meta.url), 'utf8');

/** `entry` and the modules of this folder it imports, transitively, in the order first reached. */
export function sourceFiles(
  entry: string,
  read: SourceReader = readHere,
): { name: string; source: string }[] {
  const out: { name: string; source: string }[] = [];
  const seen = new Set<string>();
  const toRead = [entry];
  for (let name = toRead.shift(); name !== undefined; name = toRead.shift()) {
    if (seen.has(name)) continue;
    seen.add(name);
    const source = read(name);
    out.push({ name, source });
    for (const m of source.matchAll(IMPORT)) toRead.push(m[1]);
  }
  return out;
}

/** 16 hex digits over those files' names and sources. */
export function hashSources(files: { name: string; source: string }[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(f.name).update('\0').update(f.source).update('\0');
  return h.digest('hex').slice(0, 16);
}

const versions = new Map<string, string | null>();

/** The version of `entry` (null when a source cannot be read, e.g. in a bundle: no cache then). */
export function sourceVersion(entry: string): string | null {
  let v = versions.get(entry);
  if (v === undefined) {
    try {
      v = hashSources(sourceFiles(entry));
    } catch {
      v = null;
    }
    versions.set(entry, v);
  }
  return v;
}

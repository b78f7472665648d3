// What the translator learned in earlier processes: the start addresses of the blocks it
// translated, each with the instruction words it found there, and the translations themselves
// (wasm function bodies), kept under the user's cache folder. A fresh process otherwise interprets
// every block until it has run LIMITS.hotBlock (jit.ts) times, and pays for small wasm modules one
// after the other; with hints, the first hinted block that gets warm has every hinted block whose
// words are in RAM at that moment translated at once — and with the stored translations that
// costs one module compile instead of translating each block again in still-cold JavaScript
// (376 blocks after a boot from a boot image: 60–78 ms of a ~340 ms compile of the compiler).
//
// A hint is only a reason to translate earlier: it is acted on only where RAM holds exactly its
// words (matches). A stored translation is used only where RAM holds exactly the words at the
// address it was made for (its key in the thread's cache, jit.ts translateShared), and a file is
// read only when its format, translator version (the sources of jit.ts and everything it imports,
// source-version.ts), RAM size and checksum all agree: a stale, foreign or corrupt file costs
// time, never a wrong result. RETROKUBE_JIT_HINTS=off turns the store off;
// RETROKUBE_JIT_HINTS=<folder> puts it elsewhere (tests, benchmarks).
//
// This module is Node's (files, hashes): the CPU sees hints only through jit-hint-source.ts, and a
// thread that runs machines turns them on (node-setup.ts: worker.ts, the disk builder,
// bench/machine). The browser lab bundles the CPU without this module and runs with no hints.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { defaultCacheDir } from './base-image.ts';
import {
  forgetTranslations,
  LIMITS as JIT_LIMITS,
  knownBlockStarts,
  seedTranslation,
  sharedTranslations,
  type Translation,
  translationsMade,
} from './jit.ts';
import { HINTED, type HintSource, useHintSource } from './jit-hint-source.ts';
import { sourceVersion } from './source-version.ts';

export const LIMITS = {
  // Block starts kept per RAM size: as many translations as a thread keeps (jit.ts sharedBlocks);
  // booting and one compile of the compiler translate about 400.
  entries: JIT_LIMITS.sharedBlocks,
  // ...and as many translations. A boot and a compile of the compiler store ~400 of ~1.6 KB (key
  // and body); a file larger than this is not one of ours.
  maxFileBytes: 64 << 20,
  maxKeyBytes: 4096, // a translation's key: a few numbers and at most maxBlock words
  maxBodyBytes: 16384, // a block's stored form (jit-group.ts encodeBlock): its function, at most maxBlock instructions of ~60 bytes and the glue
  files: 8, // hint files kept in the folder (the newest: other versions and RAM sizes age out)
  saveEveryMs: 2000, // a thread writes what it learned this long after it learned it (and at exit)
  magic: 'retrokube-jit-hints-2', // format of the file's header (2: with translations)
} as const;

const DIGEST_BYTES = 32; // sha256 of everything before it

/** The translator's code version: jit.ts and its parts (null when a source cannot be read). */
const VERSION = sourceVersion('jit.ts');
/** This build's translator version (the hint files it reads and writes carry it). */
export const TRANSLATOR_VERSION = VERSION;

export function hintsDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const v = env.RETROKUBE_JIT_HINTS;
  if (v === 'off' || VERSION === null) return null;
  return v !== undefined && v.length > 0 ? v : path.join(defaultCacheDir(env), 'jit-hints');
}

export function fileOf(dir: string, memBytes: number, version: string): string {
  return path.join(dir, `${version}-${memBytes}.bin`);
}

/** A translation as stored: the words it covers and its stored form (jit-group.ts encodeBlock). */
export interface StoredTranslation {
  length: number;
  body: Uint8Array;
}

/** What a hint file holds: hints (start → words) and translations (jit.ts key → translation). */
export interface HintFile {
  entries: Map<number, Int32Array>;
  translations: Map<string, StoredTranslation>;
}

/**
 * File layout: a JSON header line, then per entry [start, n, n words] as int32 LE, then per
 * translation [key bytes, key, length, body bytes] (int32 LE) with the key (UTF-8) and body bytes
 * after their sizes, then the digest.
 */
export function encodeHints(
  memBytes: number,
  version: string,
  entries: Map<number, Int32Array>,
  translations: ReadonlyMap<string, { length: number; body: ArrayLike<number> }> = new Map(),
): Buffer {
  const header = Buffer.from(
    `${JSON.stringify({ magic: LIMITS.magic, version, memBytes, count: entries.size, translations: translations.size })}\n`,
  );
  let words = 0;
  for (const w of entries.values()) words += 2 + w.length;
  const body = Buffer.alloc(words * 4);
  let o = 0;
  for (const [pc, w] of entries) {
    body.writeInt32LE(pc, o);
    body.writeInt32LE(w.length, o + 4);
    o += 8;
    for (const x of w) {
      body.writeInt32LE(x, o);
      o += 4;
    }
  }
  const parts: Buffer[] = [header, body];
  for (const [key, t] of translations) {
    const k = Buffer.from(key, 'utf8');
    const sizes = Buffer.alloc(12);
    sizes.writeInt32LE(k.length, 0);
    sizes.writeInt32LE(t.length, 4);
    sizes.writeInt32LE(t.body.length, 8);
    parts.push(sizes, k, Buffer.from(Uint8Array.from(t.body)));
  }
  const digest = createHash('sha256');
  for (const p of parts) digest.update(p);
  parts.push(digest.digest());
  return Buffer.concat(parts);
}

/** The contents of a hint file; throws (with the reason) on anything but a whole file of ours. */
export function decodeHints(file: Buffer, memBytes: number, version: string): HintFile {
  if (file.length > LIMITS.maxFileBytes) throw new Error('larger than any hint file');
  if (file.length < DIGEST_BYTES + 2) throw new Error('truncated');
  const payload = file.subarray(0, file.length - DIGEST_BYTES);
  const digest = createHash('sha256').update(payload).digest();
  if (!digest.equals(file.subarray(file.length - DIGEST_BYTES))) throw new Error('checksum mismatch');
  const nl = payload.indexOf(10);
  if (nl < 0) throw new Error('no header');
  const h = JSON.parse(payload.subarray(0, nl).toString('utf8'));
  if (h.magic !== LIMITS.magic) throw new Error('not a hint file of this format');
  if (h.version !== version) throw new Error('another translator version');
  if (h.memBytes !== memBytes) throw new Error('another RAM size');
  if (!Number.isInteger(h.count) || h.count < 0 || h.count > LIMITS.entries) throw new Error('bad count');
  if (!Number.isInteger(h.translations) || h.translations < 0 || h.translations > LIMITS.entries)
    throw new Error('bad count');
  const body = payload.subarray(nl + 1);
  const memWords = memBytes >>> 2;
  const entries = new Map<number, Int32Array>();
  let o = 0;
  for (let k = 0; k < h.count; k++) {
    if (o + 8 > body.length) throw new Error('truncated entry');
    const pc = body.readInt32LE(o);
    const n = body.readInt32LE(o + 4);
    o += 8;
    if (n < 1 || n > JIT_LIMITS.maxBlock || pc < 0 || pc + n > memWords || o + n * 4 > body.length)
      throw new Error('entry out of range');
    const w = new Int32Array(n);
    for (let i = 0; i < n; i++) w[i] = body.readInt32LE(o + i * 4);
    o += n * 4;
    entries.set(pc, w);
  }
  const translations = new Map<string, StoredTranslation>();
  const keyPrefix = `${memBytes},`; // jit.ts translateShared's keys begin with the RAM size
  for (let k = 0; k < h.translations; k++) {
    if (o + 12 > body.length) throw new Error('truncated translation');
    const keyBytes = body.readInt32LE(o);
    const length = body.readInt32LE(o + 4);
    const bodyBytes = body.readInt32LE(o + 8);
    o += 12;
    if (
      keyBytes < 1 ||
      keyBytes > LIMITS.maxKeyBytes ||
      length < 1 ||
      length > JIT_LIMITS.maxBlock ||
      bodyBytes < 1 ||
      bodyBytes > LIMITS.maxBodyBytes ||
      o + keyBytes + bodyBytes > body.length
    )
      throw new Error('translation out of range');
    const key = body.subarray(o, o + keyBytes).toString('utf8');
    if (!key.startsWith(keyPrefix)) throw new Error('a translation for another RAM size');
    o += keyBytes;
    translations.set(key, { length, body: new Uint8Array(body.subarray(o, o + bodyBytes)) });
    o += bodyBytes;
  }
  if (o !== body.length) throw new Error('trailing bytes');
  return { entries, translations };
}

/** The hints of one RAM size in this thread: loaded once, added to by every CPU, saved now and then. */
export class JitHints implements HintSource {
  /** Hinted start → the words found there when it was translated (insertion order: oldest first). */
  readonly entries: Map<number, Int32Array>;
  readonly memBytes: number;
  private readonly dir: string | null;
  private readonly version: string;
  private dirty = false;
  private saveTimer: ReturnType<typeof setTimeout> | undefined;
  /** translationsMade() when the thread's translations were last loaded or saved. */
  private madeAtSave = translationsMade();

  /**
   * Loads the stored hints and marks their starts HINTED in known (jit.ts knownBlockStarts); the
   * stored translations go into the thread's cache (jit.ts seedTranslation).
   */
  constructor(memBytes: number, dir: string | null, version: string, known: Uint8Array) {
    this.memBytes = memBytes;
    this.dir = dir;
    this.version = version;
    const file = this.load();
    this.entries = file.entries;
    for (const pc of this.entries.keys()) if (known[pc] === 0) known[pc] = HINTED;
    for (const [key, t] of file.translations) seedTranslation(key, t);
  }

  private load(): HintFile {
    const none = { entries: new Map(), translations: new Map() };
    if (this.dir === null) return none;
    try {
      return decodeHints(
        fs.readFileSync(fileOf(this.dir, this.memBytes, this.version)),
        this.memBytes,
        this.version,
      );
    } catch {
      return none; // none yet, or unusable: this process learns from scratch
    }
  }

  /** The thread's translations for this RAM size (the newest LIMITS.entries). */
  private translations(): Map<string, Translation> {
    const prefix = `${this.memBytes},`;
    const mine = [...sharedTranslations()].filter(([key]) => key.startsWith(prefix));
    return new Map(mine.slice(-LIMITS.entries));
  }

  /** Whether RAM holds, from pc on, exactly the words of the hint at pc. */
  matches(mem: Int32Array, pc: number): boolean {
    const w = this.entries.get(pc);
    if (w === undefined) return false;
    for (let i = 0; i < w.length; i++) if (mem[pc + i] !== w[i]) return false;
    return true;
  }

  /** Hinted starts whose words are in RAM now and that have no translation (slotOf 0). */
  matching(mem: Int32Array, slotOf: Int32Array): number[] {
    const out: number[] = [];
    for (const pc of this.entries.keys()) if (slotOf[pc] === 0 && this.matches(mem, pc)) out.push(pc);
    return out;
  }

  /** A block was translated at pc: remember its words (the newest entries survive the limit). */
  record(mem: Int32Array, pc: number, length: number): void {
    if (this.dir === null) return;
    const known = this.entries.has(pc) && this.matches(mem, pc) && this.entries.get(pc)?.length === length;
    // Nothing new: a known hint whose translation came from the store (or was saved already).
    if (known && translationsMade() === this.madeAtSave) return;
    if (!known) {
      this.entries.delete(pc);
      this.entries.set(pc, mem.slice(pc, pc + length));
      while (this.entries.size > LIMITS.entries) {
        const oldest = this.entries.keys().next().value as number;
        this.entries.delete(oldest);
      }
    }
    this.dirty = true;
    // Written a while after it learns, not per block: a burst of translations is one write. The
    // timer does not keep the process alive (exit writes the rest).
    this.saveTimer ??= setTimeout(() => this.save(), LIMITS.saveEveryMs).unref();
  }

  /** Write the hints (a temp file renamed into place) and trim the folder. Best effort. */
  save(): void {
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    if (this.dir === null || !this.dirty) return;
    this.dirty = false;
    this.madeAtSave = translationsMade();
    const file = fileOf(this.dir, this.memBytes, this.version);
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      fs.mkdirSync(this.dir, { recursive: true });
      fs.writeFileSync(tmp, encodeHints(this.memBytes, this.version, this.entries, this.translations()));
      fs.renameSync(tmp, file);
      const stored = fs
        .readdirSync(this.dir)
        .filter((n) => n.endsWith('.bin'))
        .map((n) => ({
          p: path.join(this.dir as string, n),
          mtime: fs.statSync(path.join(this.dir as string, n)).mtimeMs,
        }))
        .sort((a, b) => b.mtime - a.mtime);
      for (const old of stored.slice(LIMITS.files)) fs.rmSync(old.p, { force: true });
    } catch {
      // The store is an optimisation: an unwritable or full cache folder only means a slower start.
      fs.rmSync(tmp, { force: true });
    }
  }
}

const threadHints = new Map<number, JitHints>();
let saveAtExit = false;

/** This thread's hints for a RAM size (loaded from the store on first use). */
export function jitHints(memBytes: number): JitHints {
  let h = threadHints.get(memBytes);
  if (h === undefined) {
    h = new JitHints(memBytes, hintsDir(), VERSION ?? '', knownBlockStarts(memBytes));
    threadHints.set(memBytes, h);
    if (!saveAtExit) {
      saveAtExit = true;
      process.on('exit', saveAllHints);
    }
  }
  return h;
}

/** Give this thread's CPUs constructed from now on the stored hints (jit-hint-source.ts). */
export function useJitHints(): void {
  useHintSource(jitHints);
}

/** Write every RAM size's new hints now (at exit, and for tests). */
export function saveAllHints(): void {
  for (const h of threadHints.values()) h.save();
}

/**
 * Save and forget this thread's hints, translations and the block starts it knows (tests): the
 * next CPU loads the store afresh and finds nothing known or translated, as the first CPU of a
 * new process would.
 */
export function forgetHints(): void {
  saveAllHints();
  for (const h of threadHints.values()) knownBlockStarts(h.memBytes).fill(0);
  threadHints.clear();
  forgetTranslations();
}

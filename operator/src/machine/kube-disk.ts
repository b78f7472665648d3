// The Kube disk: the Oberon base image with Kube, KubeNet, Pods, Ticker, Ticker2 and Boot
// compiled in (by the image's own ORP, through the disk builder), and System recompiled from the
// image's own System.Mod with one call to Boot.Run at the end of its body, so every machine runs
// the command string on its serial port at power-on (kube-on-oberon spec §6, §7).
//
//   const { path } = await buildKubeDisk();          // cached under ~/.cache/retrokube/
//   retrokube disk build-kube --out kube.dsk        (the verb: cli/disk.ts)
//
// The result is cached by a hash of the sources, the base image and the builder version, so a
// second build with nothing changed is a file copy.
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { logger } from '../util/log.ts';
import { defaultCacheDir, findBaseImage } from './base-image.ts';
import { buildDisk } from './builder/build.ts';
import { parseObjectFile } from './builder/rsc.ts';
import { OberonVolume } from './fs/volume.ts';
import { KUBE_DISK_LIMITS } from './kube-disk-limits.ts';

const log = logger('kube-disk');

export const LIMITS = KUBE_DISK_LIMITS;

/** Our Oberon sources, in compile order (a module after the ones it imports). */
export const KUBE_MODULES = ['Pods', 'Kube', 'KubeNet', 'Ticker', 'Ticker2', 'Boot'] as const;

/** Bump when this module changes what goes onto the disk (part of the cache key). */
export const KUBE_DISK_VERSION = 1;

export const SOURCES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../images/oberon');

/** One module source for the builder: file name on the Oberon disk and its text. */
export interface ModuleSource {
  name: string;
  text: string;
}

/**
 * Patches the image's own System.Mod: a variable for the result and a call to Boot.Run right
 * after the abort handler is installed. Only the body changes, so System's key stays the same
 * and every module compiled against it still loads. Line ends (CR on the image) are kept.
 */
export function patchSystemMod(source: string): string {
  const decl = /VAR W: Texts\.Writer;/;
  const install = /Kernel\.Install\(SYSTEM\.ADR\(Abort\), 0\);/;
  const declHits = source.match(new RegExp(decl.source, 'g'))?.length ?? 0;
  const installHits = source.match(new RegExp(install.source, 'g'))?.length ?? 0;
  if (declHits !== 1 || installHits !== 1) {
    throw new Error(
      `System.Mod of the base image does not look like Project Oberon's (found "VAR W: Texts.Writer;" ${declHits}×, ` +
        `"Kernel.Install(SYSTEM.ADR(Abort), 0);" ${installHits}×, expected once each); use the stock 2020-08-18 image`,
    );
  }
  if (/Boot\.Run/.test(source))
    throw new Error('System.Mod already calls Boot.Run; give the unpatched base image');
  return source
    .replace(decl, 'VAR W: Texts.Writer; bootRes: INTEGER;')
    .replace(install, (m) => `${m} Oberon.Call("Boot.Run", bootRes);`);
}

/** Our sources as the builder takes them (LF line ends turned into Oberon's CR). */
export async function readKubeSources(dir = SOURCES_DIR): Promise<ModuleSource[]> {
  const out: ModuleSource[] = [];
  for (const m of KUBE_MODULES) {
    const name = `${m}.Mod`;
    const text = await readFile(join(dir, name), 'latin1');
    out.push({ name, text: text.replace(/\r?\n/g, '\r') });
  }
  return out;
}

/** sha256 over everything that decides the disk's content. */
export function kubeCacheKey(base: Buffer, sources: readonly ModuleSource[], builderVersion: string): string {
  const h = createHash('sha256');
  h.update(`kube-disk ${KUBE_DISK_VERSION}\0builder ${builderVersion}\0`);
  h.update(createHash('sha256').update(base).digest());
  for (const s of sources) h.update(`${s.name}\0${s.text}\0`);
  return h.digest('hex');
}

/** What the disk builder does for us: compile sources onto a copy of the base image. */
export interface KubeCompiler {
  /** Changes whenever the builder would produce different bytes from the same input. */
  version: string;
  /** Returns the new image; throws with the compiler's messages (file, position) on errors. */
  compile(base: Buffer, sources: readonly ModuleSource[]): Promise<Buffer>;
}

export interface BuildKubeOptions {
  /** Base image path; default found by findBaseImage (env, cache, ../shared/oberon, download). */
  base?: string;
  /** Copy the result here as well. */
  out?: string;
  cacheDir?: string;
  /** Ignore a cached build. */
  force?: boolean;
  /** Source folder; default images/oberon of this repository. */
  sourcesDir?: string;
  compiler?: KubeCompiler;
}

export interface BuildKubeResult {
  /** The disk (the cached copy, or `out` when given). */
  path: string;
  cachePath: string;
  cached: boolean;
  key: string;
  modules: string[];
}

const BUILDER_DIR = resolve(dirname(fileURLToPath(import.meta.url)), 'builder');

/** The disk builder (ORP in our RISC5 machine); its version is a hash of its own sources. */
export async function diskBuilder(): Promise<KubeCompiler> {
  const h = createHash('sha256');
  for (const f of (await readdir(BUILDER_DIR))
    .filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))
    .sort()) {
    h.update(`${f}\0`).update(await readFile(join(BUILDER_DIR, f)));
  }
  return {
    version: h.digest('hex').slice(0, LIMITS.cacheKeyChars),
    // One builder session per module: the builder compiles a whole batch inside one command,
    // where Oberon's garbage collector never runs, and Kube's compile alone fills much of the
    // heap (the next compile then traps on a NIL from NEW).
    compile: async (base, sources) => {
      let disk = base;
      for (const s of sources) disk = buildDisk({ base: disk, sources: [s], growTo: LIMITS.diskBytes }).disk;
      return disk;
    },
  };
}

/**
 * What is wrong with a built image: an object file missing, or System's key changed (then no
 * module compiled against the base's System would load).
 */
export function checkKubeImage(image: Buffer, base: Buffer): string[] {
  const vol = OberonVolume.fromBuffer(image);
  const problems: string[] = [];
  for (const m of [...KUBE_MODULES, 'System'])
    if (!vol.exists(`${m}.rsc`)) problems.push(`${m}.rsc is missing`);
  if (problems.length === 0) {
    const key = (v: OberonVolume) => parseObjectFile(v.read('System.rsc')).key;
    const was = key(OberonVolume.fromBuffer(base));
    const now = key(vol);
    if (was !== now) problems.push(`System's key changed from ${was.toString(16)} to ${now.toString(16)}`);
    const boot = parseObjectFile(vol.read('Boot.rsc'));
    if (!boot.commands.includes('Run')) problems.push('Boot.rsc has no command Run');
  }
  return problems;
}

export async function buildKubeDisk(opts: BuildKubeOptions = {}): Promise<BuildKubeResult> {
  const basePath = opts.base ?? (await findBaseImage()).path;
  const base = await readFile(basePath);
  const compiler = opts.compiler ?? (await diskBuilder());
  const modules = await readKubeSources(opts.sourcesDir);
  const system = OberonVolume.fromBuffer(base).read('System.Mod').toString('latin1');
  const sources: ModuleSource[] = [...modules, { name: 'System.Mod', text: patchSystemMod(system) }];
  const key = kubeCacheKey(base, sources, compiler.version);
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  const cachePath = join(cacheDir, `kube-${key.slice(0, LIMITS.cacheKeyChars)}.dsk`);
  let cached = !opts.force && (await exists(cachePath));
  if (cached) {
    const problems = checkKubeImage(await readFile(cachePath), base);
    if (problems.length > 0) {
      log.warn({ cachePath, problems }, 'cached Kube disk is not usable; building it again');
      cached = false;
    }
  }
  if (!cached) {
    const t0 = performance.now();
    const built = await compiler.compile(base, sources);
    const problems = checkKubeImage(built, base);
    if (problems.length > 0) throw new Error(`the built Kube disk is not usable: ${problems.join('; ')}`);
    const vol = OberonVolume.fromBuffer(built);
    if (vol.length < LIMITS.diskBytes) vol.grow(LIMITS.diskBytes);
    await mkdir(cacheDir, { recursive: true });
    const tmp = `${cachePath}.${process.pid}.tmp`;
    await writeFile(tmp, vol.toBuffer());
    await rename(tmp, cachePath);
    log.info({ cachePath, ms: Math.round(performance.now() - t0) }, 'built the Kube disk');
  }
  let path = cachePath;
  if (opts.out) {
    path = resolve(opts.out);
    await mkdir(dirname(path), { recursive: true });
    await copyFile(cachePath, path);
  }
  return { path, cachePath, cached, key, modules: [...KUBE_MODULES, 'System'] };
}

async function exists(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

// Finds the Oberon base disk image (never committed to the repo) or downloads it once into the
// user's cache, always checking its sha256 so every machine and build starts from the same bytes.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliName } from '../util/cli-name.ts';
import { logger } from '../util/log.ts';

const log = logger('base-image');

export const BASE_IMAGE = {
  fileName: 'Oberon-2020-08-18.dsk', // the image the specs describe (pdewacht/oberon-risc-emu DiskImage/)
  url: 'https://github.com/pdewacht/oberon-risc-emu/raw/master/DiskImage/Oberon-2020-08-18.dsk',
  sha256: '441a2bd292997b224fb5410a195d12b21022d571d2921d7395a7bca037aa076a',
  size: 990_208, // bytes; used for progress when the server sends no length
} as const;

export const LIMITS = {
  downloadTimeoutMs: 120_000, // a 1 MB file; anything slower is a broken network, not a slow one
  maxDownloadBytes: 64 * 1024 * 1024, // an Oberon disk is at most 64 MiB; more is not our file
  maxRedirects: 5, // the public URL redirects once (GitHub's raw link to its content host)
} as const;

export type BaseImageSource = 'env' | 'cache' | 'shared' | 'download';

export interface BaseImage {
  path: string;
  source: BaseImageSource;
  sha256: string;
}

export interface FindOptions {
  /** Download into the cache when no local copy exists (default true). */
  download?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Default `${XDG_CACHE_HOME:-~/.cache}/retrokube`. */
  cacheDir?: string;
  /** Folders that may hold the image as CI lays it out (default `<repo>/../shared/oberon`). */
  sharedDirs?: string[];
  url?: string;
  sha256?: string;
  onProgress?: (received: number, total: number) => void;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.length > 0 ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'retrokube');
}

export function defaultSharedDirs(): string[] {
  return [join(repoRoot, '..', 'shared', 'oberon'), join(repoRoot, 'shared', 'oberon')];
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * Looks in order at $RETROKUBE_OBERON_BASE, the user cache, the CI `shared/oberon` folder, then
 * downloads into the cache (from $RETROKUBE_OBERON_BASE_URL when set, else the public URL). Every local candidate and the download must match the sha256.
 */
export async function findBaseImage(opts: FindOptions = {}): Promise<BaseImage> {
  const env = opts.env ?? process.env;
  const want = opts.sha256 ?? BASE_IMAGE.sha256;
  const cacheDir = opts.cacheDir ?? defaultCacheDir(env);
  const tried: string[] = [];

  const fromEnv = env.RETROKUBE_OBERON_BASE;
  if (fromEnv) {
    if (!(await isFile(fromEnv))) {
      throw new Error(
        `RETROKUBE_OBERON_BASE=${fromEnv} is not a file; point it at ${BASE_IMAGE.fileName} or unset it`,
      );
    }
    const got = await sha256File(fromEnv);
    if (got !== want) {
      throw new Error(
        `RETROKUBE_OBERON_BASE=${fromEnv} has sha256 ${got}, expected ${want}; it is not ${BASE_IMAGE.fileName}`,
      );
    }
    return { path: fromEnv, source: 'env', sha256: got };
  }

  const candidates: [string, BaseImageSource][] = [
    [join(cacheDir, BASE_IMAGE.fileName), 'cache'],
    ...(opts.sharedDirs ?? defaultSharedDirs()).map((d): [string, BaseImageSource] => [
      join(d, BASE_IMAGE.fileName),
      'shared',
    ]),
  ];
  for (const [path, source] of candidates) {
    tried.push(path);
    if (!(await isFile(path))) continue;
    const got = await sha256File(path);
    if (got === want) return { path, source, sha256: got };
    log.warn({ path, sha256: got, expected: want }, 'ignoring a base image with the wrong sha256');
  }

  if (opts.download === false) {
    throw new Error(
      `no Oberon base image found (looked at ${tried.join(', ')}); run "${cliName()} disk base" to download it, or set RETROKUBE_OBERON_BASE to a copy of ${BASE_IMAGE.fileName}`,
    );
  }
  // Another place that serves the same bytes (a mirror, a build's local server): still sha256 checked.
  const url = opts.url ?? (env.RETROKUBE_OBERON_BASE_URL || BASE_IMAGE.url);
  const target = join(cacheDir, BASE_IMAGE.fileName);
  try {
    await download(url, target, want, opts.onProgress);
  } catch (err) {
    throw new Error(
      `no Oberon base image found (looked at ${tried.join(', ')}) and the download from ${url} failed: ${(err as Error).message}. Set RETROKUBE_OBERON_BASE to a copy of ${BASE_IMAGE.fileName} (sha256 ${want})`,
    );
  }
  return { path: target, source: 'download', sha256: want };
}

/** Downloads to a temporary name next to `target`, checks the hash, then renames into place. */
/**
 * GET with Node's own HTTP client, following redirects; resolves with a 200 response to read.
 * Not fetch: the fetch of Node 24.21 (undici) kills the process with an uncatchable
 * `assert(!this.paused)` when the server closes the connection while the body waits under
 * backpressure (nodejs/undici#5360) — as busybox httpd did, serving the disk to a loaded build.
 */
function get(url: string, signal: AbortSignal, redirectsLeft: number): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      return reject(new Error(`${url} is not an http(s) URL`));
    const req = (u.protocol === 'https:' ? httpsGet : httpGet)(u, { signal }, (res) => {
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (status >= 300 && status < 400 && location) {
        res.resume();
        if (redirectsLeft <= 0) return reject(new Error(`more than ${LIMITS.maxRedirects} redirects`));
        return resolve(get(new URL(location, u).toString(), signal, redirectsLeft - 1));
      }
      if (status !== 200) {
        res.resume();
        return reject(new Error(`HTTP ${status} ${res.statusMessage ?? ''}`.trim()));
      }
      resolve(res);
    });
    req.on('error', reject);
  });
}

async function download(
  url: string,
  target: string,
  sha256: string,
  onProgress?: (received: number, total: number) => void,
): Promise<void> {
  await mkdir(dirname(target), { recursive: true });
  const partial = `${target}.${process.pid}.part`;
  const res = await get(url, AbortSignal.timeout(LIMITS.downloadTimeoutMs), LIMITS.maxRedirects);
  const total = Number(res.headers['content-length']) || BASE_IMAGE.size;
  const hash = createHash('sha256');
  const fh = await open(partial, 'w');
  let received = 0;
  try {
    for await (const chunk of res) {
      const bytes = chunk as Uint8Array;
      received += bytes.length;
      if (received > LIMITS.maxDownloadBytes)
        throw new Error(`more than ${LIMITS.maxDownloadBytes} bytes; not a disk image`);
      hash.update(bytes);
      await fh.write(bytes);
      onProgress?.(received, total);
    }
    await fh.close();
    const got = hash.digest('hex');
    if (got !== sha256) throw new Error(`the downloaded file has sha256 ${got}, expected ${sha256}`);
    await rename(partial, target);
    log.info({ url, path: target, bytes: received }, 'downloaded the Oberon base image');
  } catch (err) {
    await fh.close().catch(() => {});
    await rm(partial, { force: true });
    throw err;
  }
}

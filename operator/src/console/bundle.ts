// The page, bundled by esbuild from page/*.ts: app.js (the page), worker.js (a RISC5 machine in a
// Web Worker, for the lab) and index.html. Built in memory when a server starts (about a second),
// or written to a folder by `retrokube lab --out DIR` for static hosting. The lab build carries the
// Kube disk, gzipped (the page inflates it with the browser's DecompressionStream).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'page');

export type PageMode = 'console' | 'lab';

export interface PageFile {
  type: string;
  body: Buffer;
}
export type PageFiles = Map<string, PageFile>;

/** A screen of Oberon's colours with a text line and a mouse-arrow block: the tab's icon. */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="2" fill="#657b83"/><rect x="3" y="4" width="10" height="2" fill="#fdf6e3"/><rect x="3" y="8" width="6" height="2" fill="#fdf6e3"/><path d="M10 9l4 3-2 .5 1 2-1 .5-1-2-1 1z" fill="#fdf6e3"/></svg>`;

let cached: Promise<Map<string, Buffer>> | null = null;

/** app.js and worker.js, minified, built once per process. */
function scripts(): Promise<Map<string, Buffer>> {
  cached ??= (async () => {
    let esbuild: typeof import('esbuild');
    try {
      esbuild = await import('esbuild');
    } catch {
      throw new Error(
        'the console page is bundled with esbuild, which is not installed: run "npm ci" (it is a devDependency)',
      );
    }
    const r = await esbuild.build({
      entryPoints: { app: join(PAGE_DIR, 'main.ts'), worker: join(PAGE_DIR, 'machine-worker.ts') },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      minify: true,
      write: false,
      outdir: '/',
      inject: [join(PAGE_DIR, 'buffer-shim.ts')],
      alias: { 'node:crypto': join(PAGE_DIR, 'no-crypto.ts') },
      logLevel: 'silent',
    });
    return new Map(r.outputFiles.map((f) => [f.path, Buffer.from(f.contents)]));
  })();
  return cached;
}

export async function pageFiles(mode: PageMode = 'console', kubeDisk?: string): Promise<PageFiles> {
  const js = await scripts();
  const html = readFileSync(join(PAGE_DIR, 'index.html'), 'utf8').replace('%MODE%', mode);
  const files: PageFiles = new Map();
  files.set('/index.html', { type: 'text/html; charset=utf-8', body: Buffer.from(html) });
  for (const [path, body] of js) files.set(path, { type: 'text/javascript; charset=utf-8', body });
  // The tab's icon; /favicon.ico too, which browsers ask for on their own (no 404 in every log).
  const icon = { type: 'image/svg+xml', body: Buffer.from(FAVICON) };
  files.set('/favicon.svg', icon);
  files.set('/favicon.ico', icon);
  if (mode === 'lab') {
    if (!kubeDisk) throw new Error('the lab page needs the Kube disk');
    files.set('/kube.dsk.gz', {
      type: 'application/gzip',
      body: gzipSync(readFileSync(kubeDisk), { level: 9 }),
    });
  }
  return files;
}

/** Writes a static build; returns each file's size. */
export function writePage(files: PageFiles, dir: string): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const [path, f] of files) {
    const out = join(dir, path);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, f.body);
    sizes[path.slice(1)] = f.body.length;
  }
  return sizes;
}

// The image's compile cache (the Dockerfile's compile-cache stage, hack/build-image.sh, both running
// operator/bin/bake-compile-cache.js): baked for a copy of the stage's tree as the image's user, then
// moved elsewhere and made read-only (a pod's root filesystem), it gives the operator's start every
// one of its TypeScript modules stripped and compiled (so Node's TypeScript stripper, ~25 MiB of RSS,
// never loads); flushing to it is harmless; and Node does not use an entry for a changed source, nor
// any entry made by another Node version or for another user. What Node did is read from its own
// account of each module (NODE_DEBUG_NATIVE=COMPILE_CACHE). In a user namespace as uid 1000, so the
// same as root or not; test/cluster/image.test.ts checks the built image's cache the same way.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheUse } from './compile-cache-use.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const IMAGE_UID = 1000; // the Dockerfile's USER and the chart's runAsUser (dockerfile.test.ts)
/** The runtime's NODE_COMPILE_CACHE, under its WORKDIR /app (dockerfile.test.ts checks the two agree). */
const CACHE =
  /\bNODE_COMPILE_CACHE=\/app\/(\S+)/.exec(readFileSync(join(REPO, 'Dockerfile'), 'utf8'))?.[1] ?? '';

const userns = spawnSync('unshare', ['--user', `--map-user=${IMAGE_UID}`, 'true']).status === 0;
if (!userns && process.env.CI === 'true')
  throw new Error('image-compile-cache: no user namespaces (unshare --user, util-linux 2.38+)');
if (!userns) process.stderr.write('[image-compile-cache] not run: no user namespaces (unshare --user)\n');

/** The build context paths the Dockerfile's compile-cache stage COPYs in (node_modules comes with its base). */
function stageSources(): string[] {
  const lines = readFileSync(join(REPO, 'Dockerfile'), 'utf8')
    .split('\n')
    .map((l) => l.trim());
  const from = lines.findIndex((l) => /^FROM\s+\S+\s+AS\s+compile-cache$/i.test(l));
  const end = lines.findIndex((l, i) => i > from && /^FROM\s/i.test(l));
  return lines
    .slice(from + 1, end)
    .filter((l) => /^COPY\s/i.test(l) && !l.includes('--from='))
    .flatMap((l) => l.split(/\s+/).slice(1, -1));
}

/**
 * A process as the image's user (or `uid`), with only the environment given. Its stderr goes to a
 * file: Node's native debug lines are lost when they meet a full pipe (seen under load: a module's
 * "was accepted" line missing), a file takes them all.
 */
function asUser(args: string[], opts: { cwd: string; env: Record<string, string>; uid?: number }) {
  const errFile = join(mkdtempSync(join(tmpdir(), 'rk-stderr-')), 'stderr');
  const fd = openSync(errFile, 'w');
  try {
    const r = spawnSync(
      'unshare',
      ['--user', `--map-user=${opts.uid ?? IMAGE_UID}`, `--map-group=${opts.uid ?? IMAGE_UID}`, ...args],
      {
        cwd: opts.cwd,
        env: { PATH: process.env.PATH ?? '', HOME: opts.cwd, ...opts.env },
        encoding: 'utf8',
        stdio: ['pipe', 'pipe', fd],
      },
    );
    return { ...r, stderr: readFileSync(errFile, 'utf8') };
  } finally {
    closeSync(fd);
    rmSync(dirname(errFile), { recursive: true, force: true });
  }
}

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name))
    .sort();

function setWritable(dir: string, writable: boolean): void {
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true }))
    chmodSync(join(e.parentPath, e.name), e.isDirectory() ? (writable ? 0o755 : 0o555) : 0o444);
  chmodSync(dir, writable ? 0o755 : 0o555);
}

describe.skipIf(!userns)("the image's compile cache, baked elsewhere and read-only", () => {
  let tmp = '';
  let app = ''; // the tree where the pod has it (moved after the bake)
  let cache = '';
  let tag = ''; // Node's folder for its version, architecture, V8 flags and uid

  /** The image's environment around `env` (the runtime stage's ENV, with this tree for /app). */
  const imageEnv = (env: Record<string, string> = {}) => ({
    NODE_ENV: 'production',
    XDG_CACHE_HOME: join(app, 'cache'),
    NODE_COMPILE_CACHE: cache,
    NODE_COMPILE_CACHE_PORTABLE: '1',
    NODE_DEBUG_NATIVE: 'COMPILE_CACHE',
    ...env,
  });

  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'rk-image-compile-cache-'));
    // The stage's tree: its COPYs (git-tracked files, tests left out as .dockerignore does) and the
    // production packages of its base (here the checkout's node_modules, linked).
    const baked = join(tmp, 'build', 'app');
    mkdirSync(baked, { recursive: true });
    const files = spawnSync('git', ['ls-files', '--', ...stageSources()], { cwd: REPO, encoding: 'utf8' })
      .stdout.split('\n')
      .filter((f) => f && !f.endsWith('.test.ts'));
    expect(files).toContain('operator/bin/bake-compile-cache.js');
    for (const f of files) cpSync(join(REPO, f), join(baked, f));
    symlinkSync(realpathSync(join(REPO, 'node_modules')), join(baked, 'node_modules'));
    mkdirSync(join(baked, CACHE), { recursive: true });

    const bake = asUser([process.execPath, 'operator/bin/bake-compile-cache.js'], {
      cwd: baked,
      env: {
        NODE_ENV: 'production',
        NODE_COMPILE_CACHE: join(baked, CACHE),
        NODE_COMPILE_CACHE_PORTABLE: '1',
      },
    });
    expect([bake.status, bake.stderr]).toEqual([0, '']);
    expect(bake.stdout).toMatch(/^bake-compile-cache: \d+ entries in /);

    // Moved to where the pod has it (another path of the same depth: packages stay outside both).
    renameSync(join(tmp, 'build'), join(tmp, 'pod01'));
    app = join(tmp, 'pod01', 'app');
    cache = join(app, CACHE);
    const tags = readdirSync(cache);
    expect(tags).toEqual([
      `v${process.versions.node}-${process.arch}-${tags[0]?.split('-')[2]}-${IMAGE_UID}`,
    ]);
    tag = tags[0] as string;
    setWritable(cache, false);
  }, 60_000);
  afterAll(() => {
    if (!tmp) return;
    if (cache) setWritable(cache, true);
    rmSync(tmp, { recursive: true, force: true });
  });

  it("the operator's start takes every TypeScript module from it, writes nothing, and runs as without it", () => {
    const before = filesUnder(cache).map((f) => [f, readFileSync(f).toString('base64')]);
    expect(before.length).toBeGreaterThan(150);
    // The start, up to its kubeconfig (none here): main.ts, the verb, operator-run.ts and everything
    // it imports (the controllers, the runtime) are loaded by then.
    const none = join(tmp, 'no-kubeconfig');
    const start = asUser(
      [process.execPath, 'operator/src/cli/main.ts', 'operator', '--kubeconfig', none, '--metrics-port', '0'],
      { cwd: app, env: imageEnv({ RETROKUBE_DEBUG: '1' }) },
    );
    expect(start.status).toBe(1);
    expect(start.stderr).toContain(`retrokube: ENOENT: no such file or directory, open '${none}'`);
    // Why both builds bake at the image's own paths (/app): a cached TypeScript module keeps the
    // path it was stripped at (Node appends `//# sourceURL=<file>`), and stack traces show that one.
    const frames = start.stderr.split('\n').filter((l) => /^\s+at .*operator\/src\//.test(l));
    expect(frames.length).toBeGreaterThan(3);
    expect(frames.every((l) => l.includes(`file://${join(tmp, 'build', 'app')}/operator/src/`))).toBe(true);
    const { stripped, compiled } = cacheUse(start.stderr);
    const ours = (url: string) => url.startsWith(`file://${app}/operator/src/`);
    const ts = [...stripped.keys()].filter(ours);
    expect(ts.length).toBeGreaterThan(50);
    for (const m of ['cli/main.ts', 'cli/operator-run.ts', 'controllers/oberonkube.ts', 'runtime/manager.ts'])
      expect(ts).toContain(`file://${app}/operator/src/${m}`);
    expect(ts.filter((u) => !stripped.get(u))).toEqual([]); // none stripped again
    // none compiled again (what Node said of each, if one was)
    const said = (u: string) => start.stderr.split('\n').filter((l) => l.includes(`${u} `) || l.endsWith(u));
    expect(ts.filter((u) => compiled.get(u) !== true).map(said)).toEqual([]);
    // Packages too (the same relative paths: node_modules sits at the same depth from both trees).
    expect([...compiled.values()].filter(Boolean).length).toBeGreaterThan(ts.length);

    // module.flushCompileCache() (operator-run.ts, once started) on a cache it cannot write: no error.
    const flush = asUser(
      [
        process.execPath,
        '--input-type=module',
        '-e',
        `import { flushCompileCache } from 'node:module';
await import('./operator/src/cli/operator-run.ts');
flushCompileCache();
console.log('flushed');`,
      ],
      { cwd: app, env: imageEnv({ NODE_DEBUG_NATIVE: '' }) },
    );
    expect([flush.status, flush.stdout, flush.stderr]).toEqual([0, 'flushed\n', '']);
    expect(filesUnder(cache).map((f) => [f, readFileSync(f).toString('base64')])).toEqual(before);
  }, 60_000);

  it('a changed module is stripped and compiled from its new source; the others still come from the cache', () => {
    const version = join(app, 'operator/src/version.ts');
    const source = readFileSync(version, 'utf8');
    try {
      chmodSync(version, 0o644);
      // The same length: Node's check of the source's hash, not of its size, tells them apart.
      const changed = source.replace('= pkg.version;', "= '9.9.9-cc1';");
      expect([changed === source, changed.length]).toEqual([false, source.length]);
      writeFileSync(version, changed);
      const r = asUser([process.execPath, 'operator/src/cli/main.ts', '--version'], {
        cwd: app,
        env: imageEnv(),
      });
      expect([r.status, r.stdout]).toEqual([0, '9.9.9-cc1\n']);
      const { stripped, compiled } = cacheUse(r.stderr);
      const url = `file://${app}/operator/src/version.ts`;
      expect(r.stderr).toMatch(/code hash mismatch/);
      expect([stripped.get(url), compiled.get(url)]).toEqual([false, false]);
      expect(stripped.get(`file://${app}/operator/src/cli/main.ts`)).toBe(true);
    } finally {
      writeFileSync(version, source);
    }
  }, 30_000);

  it("another Node version's or another user's entries are not used: Node reads only its own folder", () => {
    const main = `file://${app}/operator/src/cli/main.ts`;
    const other = tag.replace(`v${process.versions.node}-`, 'v24.0.0-');
    setWritable(cache, true);
    try {
      // The same entries, where Node 24.0.0 would keep them; this Node makes its folder and compiles.
      renameSync(join(cache, tag), join(cache, other));
      const r = asUser([process.execPath, 'operator/src/cli/main.ts', 'version'], {
        cwd: app,
        env: imageEnv(),
      });
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^retrokube \S+ \(node /);
      expect(cacheUse(r.stderr).stripped.get(main)).toBe(false);
      expect(r.stderr).not.toMatch(/\.\.\. success, size=/); // no entry read
      rmSync(join(cache, tag), { recursive: true, force: true });
      renameSync(join(cache, other), join(cache, tag));
      // Another uid than the one that baked it (a pod not run as 1000) has a folder of its own.
      const u = asUser([process.execPath, 'operator/src/cli/main.ts', 'version'], {
        cwd: app,
        env: imageEnv(),
        uid: IMAGE_UID + 1,
      });
      expect([u.status, cacheUse(u.stderr).stripped.get(main)]).toEqual([0, false]);
      expect(readdirSync(cache).sort()).toEqual([tag, tag.replace(/-\d+$/, `-${IMAGE_UID + 1}`)].sort());
    } finally {
      for (const d of readdirSync(cache))
        if (d !== tag) rmSync(join(cache, d), { recursive: true, force: true });
      setWritable(cache, false);
    }
  }, 30_000);
});

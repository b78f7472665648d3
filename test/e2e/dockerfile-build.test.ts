// The root Dockerfile built by a real engine (buildah, hack/build-dockerfile.sh, with the base made
// here by hack/build-node-base.sh) holds what hack/build-image.sh's archive holds — the same /app:
// every file with the same bytes, production node_modules only, the Oberon base disk with its
// sha256 and the same Kube disk, the same compile cache entries — and the same config; and it
// runs: as user 1000 with no network in the unpacked image, `retrokube version` answers and a
// machine boots from its Kube disk.
// Both archives come from the set-up (npm run setup); under CI=true a missing one fails the file.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_IMAGE } from '../../operator/src/machine/base-image.ts';

const REPO = join(import.meta.dirname, '../..');
// The two images unpacked (about 1.1 GB of files) go to memory when there is room and programs may
// run from it: on a busy disk, writing them took most of a run's wall time.
const UNPACK_IN_MEMORY_MIN_BYTES = 4 * 1024 ** 3;
function unpackDir(): string {
  try {
    const shm = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[1] === '/dev/shm');
    const fs = statfsSync('/dev/shm');
    if (shm && !shm[3]?.split(',').includes('noexec') && fs.bavail * fs.bsize >= UNPACK_IN_MEMORY_MIN_BYTES)
      return '/dev/shm';
  } catch {
    // no /dev/shm: the temporary folder
  }
  return tmpdir();
}
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const printPath = (script: string) =>
  execFileSync('bash', [join(REPO, script), '--print-path'], { encoding: 'utf8' }).trim();

const built = printPath('hack/build-dockerfile.sh');
const reference = printPath('hack/build-image.sh');
const why =
  process.getuid?.() !== 0
    ? 'needs root (chroot into the unpacked images)'
    : !existsSync(built)
      ? `${built} is missing: run npm run setup (hack/build-dockerfile.sh)`
      : !existsSync(reference)
        ? `${reference} is missing: run npm run setup (hack/build-image.sh)`
        : undefined;
if (why && process.env.CI === 'true') throw new Error(`dockerfile build: ${why}`);
if (why) process.stderr.write(`[dockerfile-build] not run: ${why}\n`);

interface Image {
  root: string;
  config: { Env: string[]; User: string; WorkingDir: string; Entrypoint: string[]; Cmd: string[] };
  layers: number;
}

/** An OCI archive's layers applied in order to ROOT (whiteouts honoured); its config. */
function unpack(archive: string, work: string): Image {
  const dir = mkdtempSync(join(work, 'oci-'));
  const root = join(dir, 'root');
  mkdirSync(root);
  execFileSync('tar', ['-xf', archive, '-C', dir, 'index.json', 'blobs']);
  const blob = (digest: string) => join(dir, 'blobs/sha256', digest.replace('sha256:', ''));
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
  const manifest = JSON.parse(readFileSync(blob(index.manifests[0].digest), 'utf8'));
  const config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8'));
  for (const l of manifest.layers as { digest: string }[]) {
    // tar names what it extracts (-v): this layer's whiteouts are among those names, so no walk of
    // the whole tree per layer is needed to find them.
    const names = new Set(
      execFileSync('tar', ['-xzvf', blob(l.digest), '-C', root], { encoding: 'utf8', maxBuffer: 64 << 20 })
        .split('\n')
        .filter(Boolean)
        .map((n) => n.replace(/^\.\//, '').replace(/\/$/, '')),
    );
    // Whiteouts of this layer remove what lower layers put there (then the marker itself): `.wh.X`
    // hides X; `.wh..wh..opq` hides every entry of its folder that this layer did not bring.
    for (const mark of [...names].filter((n) => /(^|\/)\.wh\.[^/]*$/.test(n))) {
      const folder = mark.includes('/') ? mark.replace(/\/[^/]*$/, '') : '';
      const base = mark.split('/').pop() ?? '';
      if (base === '.wh..wh..opq') {
        for (const e of readdirSync(join(root, folder)))
          if (!names.has(folder ? `${folder}/${e}` : e))
            rmSync(join(root, folder, e), { recursive: true, force: true });
      } else rmSync(join(root, folder, base.slice(4)), { recursive: true, force: true });
      rmSync(join(root, mark), { force: true });
    }
  }
  return { root, config: config.config, layers: manifest.layers.length };
}

function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.set(relative(dir, p), sha256(readFileSync(p)));
      else if (e.isSymbolicLink()) out.set(relative(dir, p), 'symlink');
    }
  };
  walk(dir);
  return out;
}

// Node's compile cache of the operator's modules (the Dockerfile's compile-cache stage). V8's code
// in an entry differs from one process to the next, so an entry is compared by what it is for —
// its name (the module's path and kind) and Node's header: magic, source size and source hash.
const COMPILE_CACHE = 'cache/retrokube/compile-cache/';
function compileCacheByHeader(root: string, m: Map<string, string>): Map<string, string> {
  for (const k of m.keys())
    if (k.startsWith(COMPILE_CACHE)) {
      const h = readFileSync(join(root, 'app', k)).subarray(0, 16);
      m.set(k, `entry ${h.readUInt32LE(0)} ${h.readUInt32LE(4)} ${h.readUInt32LE(12)}`);
    }
  return m;
}

/**
 * A command in the unpacked image as its user, in its working folder, with its environment and no
 * network (as a machine pod's container): chroot, then the image's own /bin/sh goes to WorkingDir.
 */
function inImage(img: Image, args: string[], timeout = 120_000) {
  return spawnSync(
    'unshare',
    [
      '--net',
      'chroot',
      `--userspec=${img.config.User}`,
      img.root,
      '/bin/sh',
      '-c',
      'cd "$1" && shift && exec "$@"',
      'sh',
      img.config.WorkingDir,
      '/bin/env',
      '-i',
      ...img.config.Env,
      'HOME=/tmp',
      ...args,
    ],
    { encoding: 'utf8', timeout, cwd: '/' },
  );
}

describe.skipIf(why !== undefined)('the Dockerfile built by buildah equals hack/build-image.sh', () => {
  let work = '';
  let ours: Image;
  let theirs: Image;

  beforeAll(() => {
    work = mkdtempSync(join(unpackDir(), 'rk-dockerfile-'));
    ours = unpack(built, work);
    theirs = unpack(reference, work);
  }, 900_000);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the same config: entrypoint, command, working folder, user, and the ENV the Dockerfile sets', () => {
    for (const k of ['Entrypoint', 'Cmd', 'WorkingDir', 'User'] as const)
      expect([k, ours.config[k]]).toEqual([k, theirs.config[k]]);
    for (const pair of [
      'NODE_ENV=production',
      'XDG_CACHE_HOME=/app/cache',
      'NODE_COMPILE_CACHE=/app/cache/retrokube/compile-cache',
      'NODE_COMPILE_CACHE_PORTABLE=1',
    ]) {
      expect(ours.config.Env).toContain(pair);
      expect(theirs.config.Env).toContain(pair);
    }
  });

  it('the same /app, byte for byte: repo files, production node_modules, the two disks; the same compile cache', () => {
    const a = compileCacheByHeader(ours.root, files(join(ours.root, 'app')));
    const b = compileCacheByHeader(theirs.root, files(join(theirs.root, 'app')));
    // Both baked the operator's modules, for the same Node and uid: the same entries.
    const entries = [...a.keys()].filter((k) => k.startsWith(COMPILE_CACHE));
    expect(entries.length).toBeGreaterThan(150);
    expect(entries.every((k) => /^entry /.test(a.get(k) ?? ''))).toBe(true);
    // npm ci writes its hidden lock file; hack/build-image.sh removes it (it names this machine's
    // install, not the product). Everything else must match.
    a.delete('node_modules/.package-lock.json');
    expect([...a.keys()].filter((k) => !b.has(k))).toEqual([]);
    expect([...b.keys()].filter((k) => !a.has(k))).toEqual([]);
    expect([...a].filter(([k, v]) => b.get(k) !== v).map(([k]) => k)).toEqual([]);
    expect(a.size).toBeGreaterThan(1000);
    // The disks: the base by its published sha256, and a Kube disk.
    expect(a.get(`cache/retrokube/${BASE_IMAGE.fileName}`)).toBe(BASE_IMAGE.sha256);
    expect([...a.keys()].filter((k) => /^cache\/retrokube\/kube-[0-9a-f]{16}\.dsk$/.test(k))).toHaveLength(1);
    // No development package: every one the lock marks `dev` is absent. (A devDependency that a
    // production package needs too, as @types/node is, is marked production there and is present in
    // both images alike.) And the production ones are all there.
    const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const present = (p: string) => existsSync(join(ours.root, 'app', p, 'package.json'));
    const dev = Object.entries(lock.packages).filter(([k, v]) => k.startsWith('node_modules/') && v.dev);
    expect(dev.length).toBeGreaterThan(10);
    expect(dev.map(([k]) => k).filter(present)).toEqual([]);
    for (const tool of ['vitest', 'typescript', '@biomejs/biome'])
      expect(present(`node_modules/${tool}`), tool).toBe(false);
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(pkg.dependencies).filter((d) => !present(`node_modules/${d}`))).toEqual([]);
  });

  it('runs: `retrokube version` as user 1000 with no network', () => {
    const r = inImage(ours, [...ours.config.Entrypoint, 'version']);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/^retrokube \S+ \(node 24\.\d+\.\d+\)$/m);
  });

  it("a machine boots in it from the image's own Kube disk (a screenshot after boot)", () => {
    const disk = readdirSync(join(ours.root, 'app/cache/retrokube')).find((f) => f.startsWith('kube-'));
    const shot = join(ours.root, 'tmp/boot.png');
    const r = inImage(
      ours,
      [
        ...ours.config.Entrypoint,
        'machine',
        'run',
        `/app/cache/retrokube/${disk}`,
        '--screenshot',
        '/tmp/boot.png',
      ],
      300_000,
    );
    expect([r.status, r.stderr.slice(-2000)]).toEqual([0, expect.stringContaining('screenshot written')]);
    expect(statSync(shot).size).toBeGreaterThan(1000);
  }, 360_000);
});

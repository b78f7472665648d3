// The image hack/build-image.sh builds without Docker holds what the Dockerfile's final stage says
// (checked here by an independent reading of the Dockerfile, .dockerignore and package-lock.json),
// and a machine pod's seed container finds everything it needs inside it: run for real in the
// unpacked image (chroot, no network, the image's user), it copies the prebuilt Kube disk. The
// operator's start there takes every one of its TypeScript modules from the compile cache baked into
// the image (Node's own account, NODE_DEBUG_NATIVE=COMPILE_CACHE), and writes nothing to it.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { machineSettings, renderPod } from '../../operator/src/controllers/oberonmachine-render.ts';
import { BASE_IMAGE } from '../../operator/src/machine/base-image.ts';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';
import { REPO_ROOT } from '../envtest/control-plane.ts';
import { cacheUse } from '../unit/compile-cache-use.ts';
import { skipReason } from './harness.ts';

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** The Dockerfile's last stage, instruction by instruction. */
function finalStage(): { op: string; args: string }[] {
  const lines = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const from = lines.map((l) => l.split(/\s+/)[0].toUpperCase()).lastIndexOf('FROM');
  return lines.slice(from + 1).map((l) => {
    const [op, ...rest] = l.split(/\s+/);
    return { op: op.toUpperCase(), args: rest.join(' ') };
  });
}

/** The runtime's NODE_COMPILE_CACHE (an absolute path in the image). */
function compileCacheDir(): string {
  const env = finalStage()
    .filter((s) => s.op === 'ENV')
    .flatMap((s) => s.args.split(/\s+/));
  return env.find((p) => p.startsWith('NODE_COMPILE_CACHE='))?.slice('NODE_COMPILE_CACHE='.length) ?? '';
}

/** .dockerignore as Docker reads it: a leading `**\/` matches at any depth, else from the context root. */
function dockerIgnored(path: string): boolean {
  const patterns = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim().replace(/\/$/, ''))
    .filter((l) => l && !l.startsWith('#'));
  const glob = (p: string) =>
    new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
  return patterns.some((p) => {
    if (p.startsWith('**/'))
      return path.split('/').some((_, i, parts) => glob(p.slice(3)).test(parts.slice(i).join('/')));
    return glob(p).test(path) || path.startsWith(`${p}/`);
  });
}

function gitFiles(src: string): string[] {
  return execFileSync('git', ['ls-files', '--', src], { cwd: REPO_ROOT, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

describe.skipIf(skipReason())('the product image (hack/build-image.sh) against the Dockerfile', () => {
  let archive: string;
  let root: string;
  let work: string;
  let config: { config: Record<string, unknown> };

  beforeAll(() => {
    archive = execFileSync('bash', [join(REPO_ROOT, 'hack/build-image.sh'), '--print-path'], {
      encoding: 'utf8',
    }).trim();
    work = mkdtempSync(join(tmpdir(), 'rk-image-'));
    root = join(work, 'root');
    mkdirSync(root);
    execFileSync('tar', ['-xf', archive, '-C', work, 'index.json', 'blobs']);
    const index = JSON.parse(readFileSync(join(work, 'index.json'), 'utf8'));
    const blob = (digest: string) => join(work, 'blobs/sha256', digest.replace('sha256:', ''));
    const manifest = JSON.parse(readFileSync(blob(index.manifests[0].digest), 'utf8'));
    config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8'));
    expect(manifest.layers).toHaveLength(1);
    execFileSync('tar', ['-xzf', blob(manifest.layers[0].digest), '-C', root]);
  }, 300_000);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("the config is the final stage's: ENV, WORKDIR, USER, ENTRYPOINT, CMD", () => {
    const stage = finalStage();
    const last = (op: string) => stage.filter((s) => s.op === op).pop()?.args;
    const c = config.config as {
      Env: string[];
      WorkingDir: string;
      User: string;
      Entrypoint: string[];
      Cmd: string[];
    };
    for (const s of stage.filter((x) => x.op === 'ENV'))
      for (const pair of s.args.split(/\s+/)) expect(c.Env).toContain(pair);
    expect(c.WorkingDir).toBe(last('WORKDIR'));
    expect(c.User).toBe(last('USER'));
    expect(c.Entrypoint).toEqual(JSON.parse(last('ENTRYPOINT') ?? 'null'));
    expect(c.Cmd).toEqual(JSON.parse(last('CMD') ?? 'null'));
  });

  it('/app holds exactly the COPYs: repo files minus .dockerignore, production node_modules, the two disks', async () => {
    const stage = finalStage();
    const app = join(
      root,
      (stage.filter((s) => s.op === 'WORKDIR').pop()?.args ?? '/app').replace(/^\//, ''),
    );
    const inImage = walk(app).map((f) => relative(app, f));
    const expected = new Map<string, string>(); // path under /app -> sha256 (or '' when only presence is checked)
    for (const s of stage.filter((x) => x.op === 'COPY' && !x.args.startsWith('--from='))) {
      const parts = s.args.split(/\s+/);
      const dest = parts.pop() as string;
      for (const src of parts)
        for (const f of gitFiles(src).filter((p) => !dockerIgnored(p))) {
          const to = dest.endsWith('/')
            ? join(dest, f === src ? (f.split('/').pop() ?? f) : relative(src, f))
            : join(dest, relative(src, f));
          expected.set(to.replace(/^\.\//, ''), sha256(readFileSync(join(REPO_ROOT, f))));
        }
    }
    // The compile cache (its own test below) is the runtime's NODE_COMPILE_CACHE under /app.
    const compileCache = `${compileCacheDir().replace(/^\/app\//, '')}/`;
    const fromRepo = inImage.filter((f) => !f.startsWith('node_modules/') && !f.startsWith('cache/'));
    expect(fromRepo.sort()).toEqual([...expected.keys()].sort());
    for (const f of fromRepo) expect([f, sha256(readFileSync(join(app, f)))]).toEqual([f, expected.get(f)]);
    expect(fromRepo.filter((f) => f.endsWith('.test.ts'))).toEqual([]); // ours; npm packages ship what they ship

    // node_modules: every production package of the lock, no development one.
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<
        string,
        { dev?: boolean; devOptional?: boolean; optional?: boolean; os?: string[]; cpu?: string[] }
      >;
    };
    // An optional package for another platform (esbuild ships one per OS and CPU) is never installed.
    const forThisPlatform = (v: { os?: string[]; cpu?: string[] }) =>
      (!v.os || v.os.includes('linux')) && (!v.cpu || v.cpu.includes('x64'));
    const prod = Object.entries(lock.packages)
      .filter(
        ([k, v]) =>
          k.startsWith('node_modules/') && !v.dev && !v.devOptional && (!v.optional || forThisPlatform(v)),
      )
      .map(([k]) => k);
    const dev = Object.entries(lock.packages)
      .filter(([k, v]) => k.startsWith('node_modules/') && v.dev)
      .map(([k]) => k);
    const present = (p: string) => {
      try {
        return statSync(join(app, p, 'package.json')).isFile();
      } catch {
        return false;
      }
    };
    expect(prod.filter((p) => !present(p))).toEqual([]);
    expect(dev.filter(present)).toEqual([]);

    // The disks: the base image by its sha256, the Kube disk the repo's sources build.
    const kube = await buildKubeDisk();
    const disks = inImage.filter((f) => f.startsWith('cache/') && !f.startsWith(compileCache)).sort();
    expect(disks).toEqual(
      [`cache/retrokube/${BASE_IMAGE.fileName}`, `cache/retrokube/${kube.cachePath.split('/').pop()}`].sort(),
    );
    expect(sha256(readFileSync(join(app, 'cache/retrokube', BASE_IMAGE.fileName)))).toBe(BASE_IMAGE.sha256);
    expect(
      sha256(readFileSync(join(app, 'cache/retrokube', kube.cachePath.split('/').pop() as string))),
    ).toBe(sha256(readFileSync(kube.cachePath)));
  });

  it("a machine pod's seed container, run in the unpacked image with no network as user 1000, copies the prebuilt Kube disk", async () => {
    const machine = {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonMachine',
      metadata: { name: 'm', namespace: 'ns', uid: 'u' },
      spec: { role: 'standalone' as const, runtime: 'pod' as const },
    };
    const { statefulSet } = renderPod(machine, machineSettings(machine), 'image');
    const seed = (statefulSet.spec as { template: { spec: { initContainers: { command: string[] }[] } } })
      .template.spec.initContainers[0];
    const disk = join(root, 'disk');
    mkdirSync(disk);
    execFileSync('chown', ['1000:1000', disk]);
    const env = (config.config as { Env: string[] }).Env;
    const r = spawnSync(
      'unshare',
      [
        '--net',
        'chroot',
        '--userspec=1000:1000',
        root,
        '/bin/env',
        '-i',
        ...env,
        'HOME=/tmp',
        ...seed.command,
      ],
      { encoding: 'utf8', timeout: 120_000, cwd: '/' },
    );
    expect([r.status, r.stderr]).toEqual([0, expect.any(String)]);
    expect(r.stdout).toContain('(cached;');
    const kube = await buildKubeDisk();
    expect(sha256(readFileSync(join(disk, 'oberon.dsk')))).toBe(sha256(readFileSync(kube.cachePath)));
  });

  it("the operator's start in the unpacked image takes every TypeScript module from the baked compile cache, as user 1000, and writes nothing", () => {
    const c = config.config as {
      Env: string[];
      User: string;
      WorkingDir: string;
      Labels?: Record<string, string>;
    };
    const dir = join(root, compileCacheDir());
    // Node's one folder: this image's Node (its label), its V8 flags, the image's uid.
    const uid = c.User.split(':')[0];
    const node = c.Labels?.['io.retrokube.node'];
    expect(readdirSync(dir)).toEqual([
      expect.stringMatching(new RegExp(`^v${node}-${process.arch}-[0-9a-f]+-${uid}$`)),
    ]);
    const before = walk(dir).map((f) => [
      relative(dir, f),
      sha256(readFileSync(f)),
      statSync(f).mode & 0o777,
    ]);
    expect(before.length).toBeGreaterThan(150);
    expect(before.filter(([, , mode]) => mode !== 0o644)).toEqual([]); // root's, readable by the user
    // Up to its kubeconfig (none here): main.ts, the verb, operator-run.ts and all it imports loaded.
    // stderr to a file: Node's native debug lines are lost when they meet a full pipe.
    const errFile = join(work, 'operator-start.stderr');
    const errFd = openSync(errFile, 'w');
    const r = spawnSync(
      'unshare',
      [
        '--net',
        'chroot',
        `--userspec=${c.User}`,
        root,
        '/bin/sh',
        '-c',
        'cd "$1" && shift && exec "$@"',
        'sh',
        c.WorkingDir,
        '/bin/env',
        '-i',
        ...c.Env,
        'HOME=/tmp',
        'NODE_DEBUG_NATIVE=COMPILE_CACHE',
        'RETROKUBE_DEBUG=1', // the failure's stack
        ...(JSON.parse(finalStage().find((s) => s.op === 'ENTRYPOINT')?.args ?? '[]') as string[]),
        'operator',
        '--kubeconfig',
        '/nonexistent/kubeconfig',
      ],
      { encoding: 'utf8', timeout: 120_000, cwd: '/', stdio: ['pipe', 'pipe', errFd] },
    );
    closeSync(errFd);
    r.stderr = readFileSync(errFile, 'utf8');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      "retrokube: ENOENT: no such file or directory, open '/nonexistent/kubeconfig'",
    );
    // Its stack names the image's files: a cached module keeps the path it was baked at (Node
    // appends it to the stripped source), and both builds bake at the image's own paths.
    const frames = r.stderr.split('\n').filter((l) => /^\s+at .*operator\/src\//.test(l));
    expect(frames.length).toBeGreaterThan(3);
    expect(frames.filter((l) => !l.includes(`file://${c.WorkingDir}/operator/src/`))).toEqual([]);
    const { stripped, compiled } = cacheUse(r.stderr);
    const ts = [...stripped.keys()].filter((u) => u.startsWith(`file://${c.WorkingDir}/operator/src/`));
    expect(ts.length).toBeGreaterThan(50);
    expect(ts).toContain(`file://${c.WorkingDir}/operator/src/cli/operator-run.ts`);
    expect(ts.filter((u) => !stripped.get(u))).toEqual([]);
    expect(ts.filter((u) => compiled.get(u) !== true)).toEqual([]);
    expect([...compiled.values()].filter(Boolean).length).toBeGreaterThan(ts.length); // its packages too
    expect(
      walk(dir).map((f) => [relative(dir, f), sha256(readFileSync(f)), statSync(f).mode & 0o777]),
    ).toEqual(before);
  });
});

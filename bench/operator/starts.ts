// The operator's RSS at start (#32's goal: 100 MiB), from interleaved rounds against one API server
// with no objects; the variants started in each round are named in harness.ts's module comment.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '../../test/envtest/control-plane.ts';
import { cacheUse } from '../../test/unit/compile-cache-use.ts';
import {
  median,
  mib,
  NO_COMPILE_CACHE,
  type StartVariant,
  sleep,
  startOperator,
  statusMiB,
  stopOperator,
} from './operator-process.ts';

const LIMITS = {
  warmSettleMs: 1_000, // after ready, before the warm-up start is stopped (see measureStarts)
} as const;

/** The image's user: the Dockerfile's USER and the chart's runAsUser. */
const IMAGE_USER = '1000:1000';

interface UnpackedImage {
  archive: string;
  /** The variants that run it. */
  variants: StartVariant[];
  /** Entries of its baked compile cache (Node's folder for its version, flags and uid 1000). */
  compileCacheEntries: number;
  compileCacheDir: string;
}

/**
 * The image's /app and Node, unpacked under `dir` (the image's other files are not needed: this
 * host's libraries serve its Node), with the variants that start its operator as its pod does.
 */
function unpackImage(archive: string, dir: string): UnpackedImage {
  execFileSync('tar', ['-xf', archive, '-C', dir, 'index.json', 'blobs']);
  const blob = (digest: string) => join(dir, 'blobs/sha256', digest.replace('sha256:', ''));
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
  const manifest = JSON.parse(readFileSync(blob(index.manifests[0].digest), 'utf8'));
  const config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8')).config as {
    Env: string[];
    WorkingDir: string;
    User: string;
    Entrypoint: string[];
  };
  if (manifest.layers.length !== 1) throw new Error(`${archive}: one layer expected (hack/build-image.sh)`);
  if (config.User !== IMAGE_USER) throw new Error(`${archive}: user ${config.User}, expected ${IMAGE_USER}`);
  const root = join(dir, 'root');
  mkdirSync(root);
  const app = config.WorkingDir.replace(/^\//, '');
  // hack/lib-oci.sh's layer names its files ./app/..., ./usr/...
  execFileSync('tar', [
    '-xzf',
    blob(manifest.layers[0].digest),
    '-C',
    root,
    `./${app}`,
    './usr/local/bin/node',
  ]);
  rmSync(join(dir, 'blobs'), { recursive: true, force: true });
  // The ENV as the pod has it, with this tree for the image's WORKDIR.
  const wd = config.WorkingDir.replace(/\/$/, '');
  const env: NodeJS.ProcessEnv = { HOME: '/tmp' };
  for (const pair of config.Env) {
    const i = pair.indexOf('=');
    const v = pair.slice(i + 1);
    env[pair.slice(0, i)] = v === wd || v.startsWith(`${wd}/`) ? join(root, v) : v;
  }
  const cacheDir = env.NODE_COMPILE_CACHE;
  if (!cacheDir || env.NODE_COMPILE_CACHE_PORTABLE !== '1')
    throw new Error(
      `${archive}: no portable NODE_COMPILE_CACHE in its ENV (an image before the baked cache?)`,
    );
  // Read-only, as in the pod: its user cannot write there (nor can it here, in its user namespace).
  const tags = readdirSync(cacheDir);
  const compileCacheEntries = tags.reduce((n, d) => n + readdirSync(join(cacheDir, d)).length, 0);
  for (const d of tags) {
    for (const f of readdirSync(join(cacheDir, d))) chmodSync(join(cacheDir, d, f), 0o444);
    chmodSync(join(cacheDir, d), 0o555);
  }
  chmodSync(cacheDir, 0o555);
  const [uid, gid] = IMAGE_USER.split(':');
  const command = [
    'unshare',
    '--user',
    `--map-user=${uid}`,
    `--map-group=${gid}`,
    join(root, 'usr/local/bin/node'),
  ];
  if (config.Entrypoint[0] !== 'node') throw new Error(`${archive}: ENTRYPOINT ${config.Entrypoint}`);
  const base = { entry: config.Entrypoint[1] as string, command, cwd: join(root, app), ownEnv: true };
  return {
    archive,
    compileCacheEntries,
    compileCacheDir: join(cacheDir, tags[0] ?? ''),
    variants: [
      { name: 'builtImage', ...base, env },
      { name: 'builtImageNoCache', ...base, env: { ...env, NODE_DISABLE_COMPILE_CACHE: '1' } },
    ],
  };
}

/** Makes what unpackImage made read-only removable again. */
function writableAgain(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (e.isDirectory()) chmodSync(join(e.parentPath, e.name), 0o755);
}

/** RSS at start of each variant, `rounds` interleaved rounds (module comment). */
export async function measureStarts(
  kubeconfig: string,
  namespace: string,
  rounds: number,
  baseline: string | undefined,
  image: string | undefined,
): Promise<Record<string, unknown>> {
  const cache = mkdtempSync(join(tmpdir(), 'rk-bench-compile-cache-'));
  try {
    const variants: StartVariant[] = [];
    let unpacked: UnpackedImage | undefined;
    if (image) {
      console.log(`unpacking ${image}`);
      mkdirSync(join(cache, 'image'));
      unpacked = unpackImage(image, join(cache, 'image'));
      variants.push(...unpacked.variants);
    }
    for (const [prefix, dir] of [
      ['', REPO_ROOT],
      ...(baseline ? [['baseline', resolve(baseline)]] : []),
    ] as const) {
      const name = (n: string) => (prefix ? `${prefix}${n[0]?.toUpperCase()}${n.slice(1)}` : n);
      variants.push({
        name: name('image'),
        entry: join(dir, 'operator/src/cli/main.ts'),
        env: NO_COMPILE_CACHE,
      });
      variants.push({
        name: name('compileCache'),
        entry: join(dir, 'operator/bin/retrokube.js'),
        warmUp: true,
        // The compile cache goes to $XDG_CACHE_HOME/retrokube/compile-cache (bin/compile-cache.js);
        // one folder per checkout, so neither finds the other's entries.
        env: {
          XDG_CACHE_HOME: join(cache, prefix || 'this'),
          NODE_COMPILE_CACHE: undefined,
          NODE_DISABLE_COMPILE_CACHE: undefined,
        },
      });
    }
    const cacheEntries: Record<string, number> = {};
    for (const v of variants.filter((x) => x.warmUp)) {
      // Ready, then a moment for `retrokube operator` to install its signal handlers: a SIGTERM
      // before that kills it without the clean exit that writes the cache (main's operator writes
      // it only then).
      const warm = await startOperator(v, kubeconfig, namespace);
      await sleep(LIMITS.warmSettleMs);
      await stopOperator(warm);
      const dir = join(v.env?.XDG_CACHE_HOME as string, 'retrokube/compile-cache');
      cacheEntries[v.name] = readdirSync(dir).reduce((n, d) => n + readdirSync(join(dir, d)).length, 0);
    }
    // What the image's start took from its baked cache, in Node's own words (one unmeasured start
    // with NODE_DEBUG_NATIVE=COMPILE_CACHE, ready against the API server, then stopped).
    let builtImageCacheUse: Record<string, unknown> | undefined;
    const built = unpacked?.variants[0];
    if (built) {
      const probe = await startOperator(
        { ...built, env: { ...built.env, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' }, captureStderr: true },
        kubeconfig,
        namespace,
      );
      await stopOperator(probe);
      const { stripped, compiled } = cacheUse(probe.stderr());
      const ts = [...stripped].filter(([u]) => u.includes('/app/operator/src/'));
      builtImageCacheUse = {
        typeScriptModules: ts.length,
        strippedAgain: ts.filter(([, hit]) => !hit).map(([u]) => u.replace(/^.*\/app\//, '')),
        modulesCompiled: compiled.size,
        modulesCompiledAgain: [...compiled.values()].filter((hit) => !hit).length,
      };
      console.log(`the image's start and its baked compile cache: ${JSON.stringify(builtImageCacheUse)}`);
    }
    const runs = new Map(
      variants.map((v) => [v.name, [] as Array<{ hwmMiB: number; rssMiB: number; load1m: number }>]),
    );
    for (let round = 0; round < rounds; round++) {
      for (const v of variants) {
        const load1m = +(loadavg()[0] ?? 0).toFixed(2);
        const op = await startOperator(v, kubeconfig, namespace);
        const sample = {
          hwmMiB: mib(statusMiB(op.pid, 'VmHWM')),
          rssMiB: mib(statusMiB(op.pid, 'VmRSS')),
          load1m,
        };
        await stopOperator(op);
        runs.get(v.name)?.push(sample);
      }
    }
    const out: Record<string, unknown> = {
      rounds,
      compileCacheEntries: cacheEntries,
      ...(unpacked
        ? {
            builtImageArchive: unpacked.archive.split('/').pop(),
            builtImageCompileCacheEntries: unpacked.compileCacheEntries,
            builtImageCompileCacheDir: unpacked.compileCacheDir.split('/').pop(),
            builtImageCacheUse,
          }
        : {}),
    };
    for (const [name, rs] of runs) {
      out[name] = {
        medianMiB: mib(median(rs.map((r) => r.hwmMiB))),
        minMiB: mib(Math.min(...rs.map((r) => r.hwmMiB))),
        maxMiB: mib(Math.max(...rs.map((r) => r.hwmMiB))),
        runs: rs,
      };
      console.log(`RSS at start, ${name}: ${rs.map((r) => r.hwmMiB).join(' / ')} MiB (VmHWM)`);
    }
    return out;
  } finally {
    writableAgain(cache);
    rmSync(cache, { recursive: true, force: true });
  }
}

// Every verb starts from main.ts, which loads the module of the verb it runs (verbs.ts, `import()`
// per group): whatever that module imports statically loads for the verb's role. The air relay runs
// in a pod limited to 64Mi; with the Kubernetes client loaded at start (its generated API: ~60 MB
// more) it was OOM-killed on the real node. Verbs that need the client load it on use (`await
// import`), and the first test keeps it so. The others start the verbs a person or a script types
// most, as real processes through the installed entry point, and look at what they loaded (#32:
// each heavy library cost a share of a start the goal is 4 bare Node starts), and at Node's compile
// cache the entry point keeps: cold, after another version of the code, and filled with junk.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../version.ts';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// Static imports and re-exports that carry values (`import type` is erased; `import()` is on use).
const STATIC = /^\s*(?:import|export)\s+(?!type\s)(?:[\w*${},\s]+?\s+from\s+)?['"]([^'"]+)['"]/gm;

/** Every module `entries` load statically (relative .ts paths and package names). */
function staticModules(entries: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    for (const m of code.matchAll(STATIC)) {
      const spec = m[1] as string;
      if (spec.startsWith('.')) walk(resolve(dirname(file), spec));
      else seen.add(spec);
    }
  };
  for (const e of entries) walk(e);
  return seen;
}

/** Every module main.ts and the verbs' modules load at start (relative .ts paths and package names). */
function startupModules(): Set<string> {
  const verbs = readFileSync(join(SRC, 'cli/verbs.ts'), 'utf8');
  return staticModules([
    join(SRC, 'cli/main.ts'),
    ...[...verbs.matchAll(/import\('(\.[^']+)'\)/g)].map((m) => resolve(SRC, 'cli', m[1] as string)),
  ]);
}

describe('what every verb loads at start', () => {
  it('not the Kubernetes client (verbs that need it import it on use)', () => {
    const mods = startupModules();
    expect(mods.size).toBeGreaterThan(20); // the walk found main.ts's verbs
    expect([...mods].filter((m) => m.startsWith('@kubernetes/') || m.endsWith('runtime/client.ts'))).toEqual(
      [],
    );
  });
});

// The operator's start (`retrokube operator`: the verbs above, then operator-run.ts) against the
// goal of 100 MiB of RSS (#32). Each of these libraries loads on the path that needs it, not there.
const NOT_AT_OPERATOR_START: Record<string, string> = {
  '@kubernetes/client-node': 'runtime/kubeconfig.ts reads the kubeconfig (~50 MiB of RSS)',
  '@sinclair/typebox': "the CRDs' schema: controllers import api/*-limits.ts, validate.ts loads on use",
  yaml: 'a kubeconfig in YAML loads it, a pod (its service account) does not',
};

describe("what the operator's start loads", () => {
  it(`none of ${Object.keys(NOT_AT_OPERATOR_START).join(', ')}`, () => {
    const mods = staticModules([join(SRC, 'cli/main.ts'), join(SRC, 'cli/operator-run.ts')]);
    expect(mods.has(join(SRC, 'controllers/sheetcluster.ts'))).toBe(true); // the walk reached the controllers
    const heavy = (m: string) =>
      Object.keys(NOT_AT_OPERATOR_START).some((h) => m === h || m.startsWith(`${h}/`));
    expect([...mods].filter(heavy)).toEqual([]);
  });
});

const run = promisify(execFile);
const ENTRY = join(SRC, '../bin/retrokube.js');
const tmp = mkdtempSync(join(tmpdir(), 'cli-startup-'));

/**
 * What the light verbs must not load, and why. Node's own modules are named as in
 * process.moduleLoadList ("NativeModule internal/deps/undici/undici"), packages by their folder.
 */
const HEAVY: Record<string, string> = {
  '@kubernetes/client-node':
    'the Kubernetes client (its generated API): only for a kubeconfig user with an exec or auth-provider plugin (runtime/kubeconfig.ts)',
  exceljs: 'the workbook reader and writer: the xlsx store loads it on open',
  googleapis: 'the Google Sheets store and transport',
  fastify: "the console's web server",
  'prom-client': 'metrics (with @opentelemetry/api): loaded with a metrics endpoint',
  '@opentelemetry/api': "prom-client's exemplars",
  'internal/deps/undici': "fetch's first call loads Node's bundled undici, about a bare start's time",
};
/** pino too, except for the air verbs: the relay's module logs (and the relay is what they steer). */
const HEAVY_BUT_AIR: Record<string, string> = { pino: 'the logger: a verb that prints needs none' };

// Records every module the process loads: packages and files (the loader hook), Node's own (its load list).
const RECORDER = join(tmp, 'record-modules.mjs');
writeFileSync(
  RECORDER,
  `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const seen = [];
registerHooks({ load(url, context, next) { seen.push(url); return next(url, context); } });
process.on('exit', () => writeFileSync(process.env.RECORD_MODULES, [...seen, ...process.moduleLoadList].join('\\n')));
`,
);

async function modulesOf(args: string[]): Promise<string[]> {
  const out = join(tmp, `modules-${args.join('-').replace(/\W+/g, '_')}.txt`);
  await run(process.execPath, ['--import', pathToFileURL(RECORDER).href, ENTRY, ...args], {
    env: { ...process.env, RECORD_MODULES: out, XDG_CACHE_HOME: join(tmp, 'cache') },
  }).catch((e: { code?: number }) => {
    if (typeof e.code !== 'number') throw e; // a verb that fails (a dead server) still loaded what it loads
  });
  return readFileSync(out, 'utf8').split('\n');
}

const heavyIn = (modules: string[], heavy: Record<string, string>): string[] =>
  Object.keys(heavy).filter((h) =>
    modules.some((m) => m.includes(`/node_modules/${h}/`) || m.endsWith(` ${h}`) || m.includes(` ${h}/`)),
  );

// A closed port: the verbs that talk to a server fail at once, on their real path.
const DEAD = 'http://127.0.0.1:9';

describe('what the light verbs load (real processes)', () => {
  const light: [string, string[]][] = [
    ['--help', ['--help']],
    ['version', ['version']],
    ['status', ['status', '--state', join(tmp, 'no-state')]],
    ['skctl get', ['skctl', '--server', DEAD, 'get', 'nodes']],
    ['sheets bridge status', ['sheets', 'bridge', 'status', '--local', DEAD, '--peer', DEAD]],
    ['sheets bridge migrate', ['sheets', 'bridge', 'migrate', 'web', '--local', DEAD, '--peer', DEAD]],
  ];
  for (const [name, args] of light) {
    it(`${name}: none of ${Object.keys({ ...HEAVY, ...HEAVY_BUT_AIR }).length} heavy modules`, async () => {
      const modules = await modulesOf(args);
      expect(modules.some((m) => m.endsWith('/cli/main.ts'))).toBe(true); // the recorder saw the start
      expect(heavyIn(modules, { ...HEAVY, ...HEAVY_BUT_AIR })).toEqual([]);
    }, 30_000);
  }

  for (const args of [
    ['air', 'relay', '--help'],
    ['air', 'state', '--control', DEAD],
  ]) {
    it(`${args.join(' ')}: none of the heavy modules but the logger`, async () => {
      const modules = await modulesOf(args);
      expect(modules.some((m) => m.endsWith('/cli/air.ts'))).toBe(true);
      expect(heavyIn(modules, HEAVY)).toEqual([]);
    }, 30_000);
  }

  it("the recorder sees them when they load: a package (pino for sheets wire), and fetch's undici", async () => {
    expect(heavyIn(await modulesOf(['sheets', 'wire', 'serve', '--help']), HEAVY_BUT_AIR)).toEqual(['pino']);
    const out = join(tmp, 'modules-fetch.txt');
    await run(
      process.execPath,
      ['--import', pathToFileURL(RECORDER).href, '-e', `fetch('${DEAD}').catch(() => {})`],
      { env: { ...process.env, RECORD_MODULES: out } },
    );
    expect(heavyIn(readFileSync(out, 'utf8').split('\n'), HEAVY)).toEqual(['internal/deps/undici']);
  }, 30_000);
});

describe("the entry point's compile cache", () => {
  const version = (env: NodeJS.ProcessEnv) =>
    run(process.execPath, [ENTRY, '--version'], { env: { ...process.env, NODE_COMPILE_CACHE: '', ...env } });
  const entries = (dir: string): string[] =>
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => join(d.parentPath, d.name));

  it("goes to the user's cache folder; cold, warm and filled with junk, the answer is the same", async () => {
    const cache = join(tmp, 'xdg');
    expect((await version({ XDG_CACHE_HOME: cache })).stdout).toBe(`${VERSION}\n`); // cold
    const dir = join(cache, 'retrokube', 'compile-cache');
    const files = entries(dir);
    expect(files.length).toBeGreaterThan(5); // main.ts, program.ts, ... were cached
    // one subfolder per Node version (and architecture, V8 flags): another Node's entries are not read
    expect(readdirSync(dir)).toEqual([expect.stringMatching(new RegExp(`^v${process.versions.node}-`))]);
    expect((await version({ XDG_CACHE_HOME: cache })).stdout).toBe(`${VERSION}\n`); // warm
    for (const f of files) writeFileSync(f, 'not a cache entry of any Node');
    expect((await version({ XDG_CACHE_HOME: cache })).stdout).toBe(`${VERSION}\n`); // junk
    expect(entries(dir).some((f) => readFileSync(f, 'utf8') !== 'not a cache entry of any Node')).toBe(true);
  }, 60_000);

  it('a module changed since it was cached (another version of the code) runs as it is now', async () => {
    const app = join(tmp, 'app');
    const cache = join(tmp, 'app-cache');
    writeFileSync(join(tmp, 'app-m.ts'), "export const answer: string = 'one';\n");
    writeFileSync(
      `${app}.mjs`,
      `import { enableCliCompileCache } from ${JSON.stringify(pathToFileURL(join(SRC, '../bin/compile-cache.js')).href)};
const r = enableCliCompileCache();
const { answer } = await import('./app-m.ts');
console.log(r.status, answer);
`,
    );
    const answer = async () =>
      (
        await run(process.execPath, [`${app}.mjs`], {
          env: { ...process.env, NODE_COMPILE_CACHE: '', XDG_CACHE_HOME: cache },
        })
      ).stdout;
    expect(await answer()).toBe('1 one\n'); // 1: enabled (module.constants.compileCacheStatus.ENABLED)
    expect(await answer()).toBe('1 one\n');
    expect(entries(join(cache, 'retrokube', 'compile-cache')).length).toBeGreaterThan(0); // 'one' is cached
    // same length, same modification time: only the content differs
    const { mtime } = statSync(join(tmp, 'app-m.ts'));
    writeFileSync(join(tmp, 'app-m.ts'), "export const answer: string = 'two';\n");
    utimesSync(join(tmp, 'app-m.ts'), mtime, mtime);
    expect(await answer()).toBe('1 two\n');
  }, 60_000);

  it('$NODE_COMPILE_CACHE still names the folder, and NODE_DISABLE_COMPILE_CACHE turns it off', async () => {
    const { compileCacheDir } = (await import(pathToFileURL(join(SRC, '../bin/compile-cache.js')).href)) as {
      compileCacheDir: (env: NodeJS.ProcessEnv, home: string) => string | undefined;
    };
    expect(compileCacheDir({}, '/home/ada')).toBe('/home/ada/.cache/retrokube/compile-cache');
    expect(compileCacheDir({ XDG_CACHE_HOME: '/c' }, '/home/ada')).toBe('/c/retrokube/compile-cache');
    expect(compileCacheDir({ NODE_COMPILE_CACHE: '/n' }, '/home/ada')).toBeUndefined();
    expect(compileCacheDir({}, '')).toBeUndefined();
    const off = join(tmp, 'off');
    await version({ XDG_CACHE_HOME: off, NODE_DISABLE_COMPILE_CACHE: '1' });
    expect(() => readdirSync(off)).toThrow(/ENOENT/);
  }, 60_000);
});

// The invariants of the root Dockerfile, read as text (test/e2e/dockerfile-build.test.ts builds it
// with a real engine): node:24-slim runtime, non-root user, production dependencies only, one entrypoint, and
// that everything the entrypoint imports at run time is a production dependency.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  body: Instruction[];
}

/** Parses a Dockerfile into stages (comments dropped, `\` continuations joined). */
function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: Stage[] = [];
  const globalArgs = new Map<string, string>(); // ARGs before the first FROM, with their defaults
  for (const line of lines) {
    const m = /^(\S+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`Dockerfile: cannot parse line: ${line}`);
    const op = m[1]!.toUpperCase();
    const args = m[2]!;
    if (op === 'ARG' && stages.length === 0) {
      const [k, v = ''] = args.split('=');
      globalArgs.set(k!, v);
    } else if (op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      // FROM ${NODE_IMAGE}: the default a build without --build-arg uses.
      const from = (f?.[1] ?? args).replace(/\$\{?(\w+)\}?/g, (_, k: string) => globalArgs.get(k) ?? '');
      stages.push({ from, name: f?.[2], body: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Dockerfile: ${op} before FROM`);
      stage.body.push({ op, args });
    }
  }
  return stages;
}

const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const runtime = stages.at(-1)!;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.test.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

/** Bare package names a file loads at run time (type-only imports are erased, so skipped). */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs: string[] = [];
  const re =
    /^\s*(import|export)\s+(?!type\s)(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;
  for (const m of text.matchAll(re)) {
    const spec = m[2] ?? m[3];
    if (!spec || /^(\.|\/|node:|file:)/.test(spec) || builtinModules.includes(spec)) continue;
    const parts = spec.split('/');
    specs.push(spec.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
  }
  return specs;
}

describe('Dockerfile', () => {
  it('is multi-stage and every stage, including the runtime, is node:24-slim or built on an earlier stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(runtime.from).toMatch(/^node:24-slim(@sha256:[a-f0-9]{64})?$/);
    stages.forEach((s, i) => {
      const earlier = stages.slice(0, i).map((e) => e.name);
      if (!earlier.includes(s.from)) expect(s.from).toMatch(/^node:24-slim(@sha256:[a-f0-9]{64})?$/);
    });
  });

  it('installs production dependencies only (npm ci --omit=dev) and the runtime copies node_modules from there', () => {
    const deps = stages.find((s) => s.body.some((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args)));
    expect(deps, 'a stage runs npm ci').toBeDefined();
    const ci = deps!.body.find((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args))!;
    expect(ci.args).toMatch(/--omit=dev\b/);
    expect(ci.args).not.toMatch(/--include=dev|--production=false/);
    const copyModules = runtime.body.find((i) => i.op === 'COPY' && /node_modules/.test(i.args));
    expect(copyModules?.args).toContain(`--from=${deps!.name}`);
    // No package manager runs in the runtime stage, so nothing else can sneak in.
    expect(runtime.body.filter((i) => i.op === 'RUN' && /\bnpm\b|\byarn\b|\bpnpm\b/.test(i.args))).toEqual(
      [],
    );
  });

  it('runs as a non-root user that matches the chart (uid 1000)', () => {
    const users = runtime.body.filter((i) => i.op === 'USER').map((i) => i.args);
    expect(users.length).toBeGreaterThan(0);
    const last = users.at(-1)!;
    expect(last.split(':')[0]).not.toMatch(/^(root|0)$/);
    expect(last).toMatch(/^1000(:1000)?$|^node$/);
    const chart = readFileSync(join(ROOT, 'charts/retrokube/templates/deployment.yaml'), 'utf8');
    expect(chart).toMatch(/runAsUser: 1000\b/);
    // USER must come after every COPY/RUN that could need root, i.e. be the last but ENTRYPOINT/CMD/ENV.
    const afterUser = runtime.body.slice(runtime.body.findLastIndex((i) => i.op === 'USER') + 1);
    expect(afterUser.filter((i) => ['RUN', 'COPY', 'ADD'].includes(i.op))).toEqual([]);
  });

  it('has one entrypoint for every role: node operator/src/cli/main.ts, and that file exists', () => {
    const ep = runtime.body.filter((i) => i.op === 'ENTRYPOINT');
    expect(ep).toHaveLength(1);
    expect(JSON.parse(ep[0]!.args)).toEqual(['node', 'operator/src/cli/main.ts']);
    expect(existsSync(join(ROOT, 'operator/src/cli/main.ts'))).toBe(true);
  });

  it('copies only paths that exist and keeps test/dev folders out of the build context', () => {
    for (const i of runtime.body.filter((x) => x.op === 'COPY' && !x.args.includes('--from='))) {
      const srcs = i.args.split(/\s+/).slice(0, -1);
      for (const s of srcs) expect(existsSync(join(ROOT, s)), `COPY source ${s}`).toBe(true);
    }
    const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const p of ['node_modules', 'test', '.git', '**/*.test.ts']) expect(ignore).toContain(p);
  });

  it('needs no dev dependency at run time: every package imported under operator/src is a production dependency', () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(join(ROOT, 'operator/src'))) {
      for (const name of runtimeImports(file)) {
        if (!(name in pkg.dependencies)) offenders.push(`${file.slice(ROOT.length + 1)} imports ${name}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it("bakes the operator's compile cache as the runtime will read it: same Node, files, packages, user, environment and folder", () => {
    const envOf = (st: Stage) =>
      st.body
        .filter((i) => i.op === 'ENV')
        .flatMap((i) => i.args.split(/\s+/).filter((p) => p.includes('=')));
    const env = new Map(envOf(runtime).map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
    const cacheDir = env.get('NODE_COMPILE_CACHE') ?? '';
    // Portable: entries keyed by paths relative to the folder (tests and benchmarks move the tree).
    expect(env.get('NODE_COMPILE_CACHE_PORTABLE')).toBe('1');
    const workdir = runtime.body.findLast((i) => i.op === 'WORKDIR')?.args ?? '';
    expect(cacheDir.startsWith(`${workdir}/`)).toBe(true);
    // The runtime's last COPY brings it from its stage to the folder NODE_COMPILE_CACHE names (last:
    // hack/build-image.sh bakes it in the tree the COPYs before it assembled).
    const copies = runtime.body.filter((i) => i.op === 'COPY');
    const [from, src, dest] =
      /^--from=(\S+)\s+(\S+)\s+(\S+)$/.exec(copies.at(-1)?.args ?? '')?.slice(1) ?? [];
    expect([src, `${workdir}/${dest?.replace(/^\.\//, '')}`]).toEqual([cacheDir, cacheDir]);
    const stage = stages.find((st) => st.name === from);
    expect(stage, `stage ${from}`).toBeDefined();
    // On the same base (the same Node binary) through the stage that installs the production packages.
    const chain: Stage[] = [stage!];
    for (let st = stage; st; st = stages.find((e) => e.name === st?.from)) if (st !== stage) chain.push(st);
    expect(chain.at(-1)?.from).toBe(runtime.from);
    expect(chain.some((st) => st.body.some((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args)))).toBe(true);
    // Its working folder (its own, else the nearest stage's it is built on) is the runtime's.
    expect(
      chain.find((st) => st.body.some((i) => i.op === 'WORKDIR'))?.body.findLast((i) => i.op === 'WORKDIR')
        ?.args,
    ).toBe(workdir);
    // The same files from the build context, the runtime's environment, and its user for the bake.
    const contextCopies = (st: Stage) =>
      st.body.filter((i) => i.op === 'COPY' && !i.args.includes('--from=')).map((i) => i.args);
    expect(contextCopies(stage!).sort()).toEqual(contextCopies(runtime).sort());
    expect(envOf(stage!).sort()).toEqual(envOf(runtime).sort());
    const bake = stage!.body.findIndex(
      (i) => i.op === 'RUN' && /\bnode operator\/bin\/bake-compile-cache\.js\b/.test(i.args),
    );
    expect(bake).toBeGreaterThan(-1);
    expect(stage!.body.slice(0, bake).findLast((i) => i.op === 'USER')?.args).toBe(
      runtime.body.findLast((i) => i.op === 'USER')?.args,
    );
    // Node writes its entries 0600; the runtime copies them as root, and its user must read them.
    expect(stage!.body[bake]?.args).toMatch(/chmod -R a\+rX/);
    expect(existsSync(join(ROOT, 'operator/bin/bake-compile-cache.js'))).toBe(true);
  });
});

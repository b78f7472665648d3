// `npm run marketplace`: writes marketplace/ from the TypeScript sources (render.ts) and checks
// it (check.ts). `-- --stage DIR` also writes the publishable artifacts of both repositories into
// DIR: symlinks dereferenced, and the operator chart copied into the platform package's charts/
// (Flux packages neither symlinks nor anything outside the artifact).
import { cpSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { REPO_ROOT } from '../api/generate.ts';
import { checkMarketplace } from './check.ts';
import {
  APPS_REPO,
  marketplaceFiles,
  OPERATOR_CHART,
  OPERATOR_PACKAGE,
  PLATFORM_REPO,
  ROOT,
} from './render.ts';

/** Files under marketplace/ that are generated (README.md is written by hand). */
export function committedFiles(root = REPO_ROOT): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(relative(root, p), readFileSync(p, 'utf8'));
    }
  };
  walk(join(root, ROOT));
  out.delete(`${ROOT}/README.md`);
  return out;
}

/** The artifacts as published: returns the staged folder of each repository. */
export function stage(out: string, root = REPO_ROOT): { apps: string; platform: string } {
  const apps = join(out, 'apps');
  const platform = join(out, 'platform');
  rmSync(out, { recursive: true, force: true });
  cpSync(join(root, APPS_REPO), apps, { recursive: true, dereference: true });
  cpSync(join(root, PLATFORM_REPO), platform, { recursive: true, dereference: true });
  const pkg = join(platform, 'packages/system', OPERATOR_PACKAGE);
  cpSync(join(root, OPERATOR_CHART), join(pkg, 'charts/retrokube'), { recursive: true, dereference: true });
  // In the artifact the dependency is the copy inside it.
  const chart = join(pkg, 'Chart.yaml');
  writeFileSync(
    chart,
    readFileSync(chart, 'utf8').replace(/repository: file:\/\/\S+/, 'repository: file://charts/retrokube'),
  );
  return { apps, platform };
}

/** Paths of symlinks under `dir` (a staged artifact must have none). */
export function symlinks(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out.push(p);
      else if (st.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

function main(argv: string[]): number {
  const files = marketplaceFiles();
  for (const p of committedFiles().keys()) if (!files.has(p)) rmSync(join(REPO_ROOT, p));
  for (const [p, text] of files) {
    mkdirSync(dirname(join(REPO_ROOT, p)), { recursive: true });
    writeFileSync(join(REPO_ROOT, p), text);
  }
  const problems = checkMarketplace(files);
  for (const pr of problems) process.stderr.write(`${pr.rule}: ${pr.file}: ${pr.message}\n`);
  process.stdout.write(`marketplace: ${files.size} files written, ${problems.length} problems\n`);
  const i = argv.indexOf('--stage');
  if (i >= 0) {
    const dir = argv[i + 1];
    if (!dir) throw new Error('--stage needs a folder');
    const s = stage(dir);
    const links = [...symlinks(s.apps), ...symlinks(s.platform)];
    process.stdout.write(
      `staged ${s.apps} and ${s.platform}${links.length ? `; symlinks: ${links.join(', ')}` : ''}\n`,
    );
    if (links.length) return 1;
  }
  return problems.length ? 1 : 0;
}

if (process.argv[1] === import.meta.filename) process.exitCode = main(process.argv.slice(2));

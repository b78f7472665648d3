// `npm run bench` points at something real (issue 17 item 16): bench/run.ts lists every benchmark
// folder and refuses an unknown name; the README says why npm warns about engines on Node 20.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const run = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bench/run.ts'), ...args],
      { timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });

describe('npm run bench', () => {
  it('the script runs bench/run.ts, which lists every benchmark folder with what it measures', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const file = /^node (\S+)$/.exec(pkg.scripts.bench)?.[1];
    expect(file && existsSync(join(ROOT, file))).toBe(true);
    const folders = readdirSync(join(ROOT, 'bench'), { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(ROOT, 'bench', d.name, 'run.ts')))
      .map((d) => d.name);
    expect(folders.length).toBeGreaterThan(3);
    const r = await run();
    expect(r.code).toBe(0);
    for (const f of folders) expect(r.stdout).toMatch(new RegExp(`^  ${f}\\s+\\S`, 'm'));
  });

  it('an unknown name is refused with the list to choose from', async () => {
    const r = await run('nope');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no benchmark named nope; choose from .*air/);
  });

  it('the README explains the engine warnings of npm on the system Node', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toMatch(/EBADENGINE/);
    expect(readme).toMatch(/npm itself runs on the system Node/);
  });
});

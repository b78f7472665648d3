import { execFile } from 'node:child_process';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { baseImageCopy } from '../machine/fs/test-support.ts';
import { OberonVolume } from '../machine/fs/volume.ts';
import { parseSize, registerDiskVerbs } from './disk.ts';

const run = promisify(execFile);
const main = join(import.meta.dirname, 'main.ts');
const cli = (...args: string[]) => run(process.execPath, [main, ...args], { encoding: 'utf8' });

/** The same verbs in this process (faster than a process per step; the process path is tested too). */
async function inProcess(...args: string[]): Promise<void> {
  const program = new Command('retrokube').exitOverride();
  registerDiskVerbs(program);
  await program.parseAsync(['node', 'retrokube', ...args]);
}

describe('retrokube disk', () => {
  it('ls, put --text, get --text, rm and grow work on an image from the command line', async () => {
    const disk = await baseImageCopy();
    const dir = await mkdtemp(join(tmpdir(), 'rk-cli-'));
    const ls = JSON.parse((await cli('disk', 'ls', disk, '-o', 'json')).stdout) as {
      name: string;
      size: number;
    }[];
    expect(ls).toHaveLength(136);
    expect(ls.find((f) => f.name === 'System.Tool')?.size).toBe(560);
    expect((await cli('disk', 'ls', disk)).stdout).toMatch(/136 files, 797974 bytes/);

    await writeFile(join(dir, 'Hi.Mod'), 'MODULE Hi;\nEND Hi.\n');
    await inProcess('disk', 'put', disk, '--text', join(dir, 'Hi.Mod'));
    await inProcess('disk', 'get', disk, 'Hi.Mod', '--out', join(dir, 'raw.Mod'));
    expect(await readFile(join(dir, 'raw.Mod'), 'latin1')).toBe('MODULE Hi;\rEND Hi.\r');
    await inProcess('disk', 'get', disk, 'Hi.Mod', '--text', '--out', join(dir, 'back.Mod'));
    expect(await readFile(join(dir, 'back.Mod'), 'utf8')).toBe('MODULE Hi;\nEND Hi.\n');

    await inProcess('disk', 'rm', disk, 'Hi.Mod');
    await expect(cli('disk', 'rm', disk, 'Hi.Mod')).rejects.toMatchObject({
      code: 1,
      stderr: /no such file .*Hi.Mod/,
    });
    await inProcess('disk', 'grow', disk, '8M');
    expect((await stat(disk)).size).toBe(8 * 1024 * 1024);
    await inProcess('disk', 'check', disk);
    await expect(inProcess('disk', 'put', disk, '--as', '9bad', join(dir, 'Hi.Mod'))).rejects.toThrow(
      /bad Oberon file name: "9bad" must start with a letter/,
    );
  }, 120_000);

  it('disk build compiles sources into a new disk and fails with the position of a compile error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rk-build-'));
    await writeFile(join(dir, 'Hi.Mod'), 'MODULE Hi;\n  PROCEDURE Run*;\n  END Run;\nEND Hi.\n');
    await writeFile(join(dir, 'Bad.Mod'), 'MODULE Bad;\nBEGIN y := 2\nEND Bad.\n');
    const base = await baseImageCopy();
    const out = join(dir, 'out.dsk');
    await inProcess('disk', 'build', '--base', base, '--out', out, '--grow', '2M', join(dir, 'Hi.Mod'));
    const vol = await OberonVolume.open(out);
    expect(vol.exists('Hi.rsc') && vol.exists('Hi.Mod')).toBe(true);
    expect((await stat(out)).size).toBe(2 * 1024 * 1024);
    await expect(
      inProcess('disk', 'build', '--base', base, '--out', join(dir, 'bad.dsk'), join(dir, 'Bad.Mod')),
    ).rejects.toThrow(/Bad does not compile:\n {2}Bad.Mod:2:\d+ \(pos \d+\): undef/);
    await expect(stat(join(dir, 'bad.dsk'))).rejects.toThrow(/ENOENT/);
  }, 120_000);

  it('reads sizes like 8M, 512K and plain bytes, and rejects anything else', () => {
    expect(parseSize('8M')).toBe(8 << 20);
    expect(parseSize('8MiB')).toBe(8 << 20);
    expect(parseSize('512K')).toBe(512 << 10);
    expect(parseSize('4096')).toBe(4096);
    expect(() => parseSize('8G')).toThrow(/not a number of bytes/);
  });
});

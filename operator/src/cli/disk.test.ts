import { execFile } from 'node:child_process';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { baseImageCopy } from '../machine/fs/test-support.ts';
import { parseSize } from './disk.ts';

const run = promisify(execFile);
const main = join(import.meta.dirname, 'main.ts');
const cli = (...args: string[]) => run(process.execPath, [main, ...args], { encoding: 'utf8' });

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
    await cli('disk', 'put', disk, '--text', join(dir, 'Hi.Mod'));
    const raw = await cli('disk', 'get', disk, 'Hi.Mod', '--out', '-');
    expect(raw.stdout).toBe('MODULE Hi;\rEND Hi.\r');
    await cli('disk', 'get', disk, 'Hi.Mod', '--text', '--out', join(dir, 'back.Mod'));
    expect(await readFile(join(dir, 'back.Mod'), 'utf8')).toBe('MODULE Hi;\nEND Hi.\n');

    await cli('disk', 'rm', disk, 'Hi.Mod');
    await expect(cli('disk', 'rm', disk, 'Hi.Mod')).rejects.toMatchObject({
      stderr: /no such file .*Hi.Mod/,
    });
    await cli('disk', 'grow', disk, '8M');
    expect((await stat(disk)).size).toBe(8 * 1024 * 1024);
    expect((await cli('disk', 'check', disk)).stdout).toMatch(/consistent/);
    await expect(cli('disk', 'put', disk, '--as', '9bad', join(dir, 'Hi.Mod'))).rejects.toMatchObject({
      stderr: /bad Oberon file name: "9bad" must start with a letter/,
    });
  });

  it('reads sizes like 8M, 512K and plain bytes, and rejects anything else', () => {
    expect(parseSize('8M')).toBe(8 << 20);
    expect(parseSize('8MiB')).toBe(8 << 20);
    expect(parseSize('512K')).toBe(512 << 10);
    expect(parseSize('4096')).toBe(4096);
    expect(() => parseSize('8G')).toThrow(/not a number of bytes/);
  });
});

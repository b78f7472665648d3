// The first commands a newcomer types: --version, --help piped into head, every option's help.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { CHECKOUT_LAUNCHER, cliNameFor } from '../util/cli-name.ts';
import { VERSION } from '../version.ts';
import { buildProgram, programFor, wordsOf } from './program.ts';
import { SHEETS_PARTS, VERB_GROUPS, verbNames } from './verbs.ts';

const MAIN = join(import.meta.dirname, 'main.ts');

function run(
  args: string[],
  closeStdout = false,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    // Like `| head` that has read what it wanted: the reading end is gone before the writes.
    if (closeStdout) child.stdout.destroy();
    else child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

function allCommands(c: Command): Command[] {
  return [c, ...c.commands.flatMap(allCommands)];
}

describe('the first commands', () => {
  it('--version and -V print the version', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await run([flag]);
      expect(r).toMatchObject({ code: 0, out: `${VERSION}\n`, err: '' });
    }
  }, 60_000);

  it('--help into a closed pipe exits quietly, with no EPIPE trace', async () => {
    const r = await run(['--help'], true);
    expect(r.err).not.toMatch(/EPIPE|Error/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('no option tells its default twice ("(default: any free port) (default: 0)")', async () => {
    const twice: string[] = [];
    for (const cmd of allCommands(await buildProgram())) {
      const help = cmd.createHelp();
      for (const opt of cmd.options) {
        const text = help.optionDescription(opt);
        if ((text.match(/\(default/g) ?? []).length > 1) twice.push(`${cmd.name()} ${opt.flags}: ${text}`);
      }
    }
    expect(twice).toEqual([]);
  });
});

describe('a command line loads only the verb it names (verbs.ts)', () => {
  const helpOf = (c: Command): string => c.helpInformation({ error: false });

  it("the list --help shows is exactly what the verbs' modules register, in the same order", async () => {
    const full = await buildProgram();
    const index = await programFor(['--help']);
    expect(index.commands.map((c) => [c.name(), c.description()])).toEqual(
      full.commands.map((c) => [c.name(), c.description()]),
    );
    expect(helpOf(index)).toBe(helpOf(full));
  });

  it('each group registers the verbs it lists (and those it extends), and no other', async () => {
    for (const g of VERB_GROUPS) {
      const tree = await buildProgram([g]);
      expect(tree.commands.map((c) => c.name()).sort()).toEqual(
        ['version', ...verbNames(g), ...(g.extends ?? [])].sort(),
      );
    }
  });

  it('a verb that several groups add to gets all of their subcommands', async () => {
    const full = await buildProgram();
    for (const verb of full.commands) {
      const alone = (await programFor([verb.name()])).commands.find((c) => c.name() === verb.name());
      expect(
        alone?.commands.map((c) => c.name()),
        verb.name(),
      ).toEqual(verb.commands.map((c) => c.name()));
    }
  });

  it('finds the verb past options, and after help', async () => {
    expect(wordsOf(['--help'])).toEqual([]);
    expect(wordsOf(['skctl', '--server', 'http://x', 'get'])[0]).toBe('skctl');
    expect(wordsOf(['help', 'air', 'relay'])).toEqual(['air', 'relay']);
    const tree = await programFor(['air', 'relay', '--help']);
    expect(tree.commands.map((c) => c.name())).toEqual(['version', 'air']);
    expect(tree.commands[1]?.commands.length).toBeGreaterThan(3); // the real air verbs, not a listing
  });

  it('a sheets subverb loads its module only, which registers exactly the subverbs it lists', async () => {
    const full = (await buildProgram()).commands.find((c) => c.name() === 'sheets');
    const seen: string[] = [];
    for (const part of SHEETS_PARTS) {
      for (const word of part.words) {
        const tree = await programFor(word === 'skctl' ? ['skctl', '--help'] : ['sheets', word, '--help']);
        const sheets = tree.commands.find((c) => c.name() === 'sheets');
        const registered = [
          ...(sheets?.commands.map((c) => c.name()) ?? []),
          ...tree.commands.map((c) => c.name()).filter((n) => !['version', 'sheets'].includes(n)),
        ];
        expect(registered.sort(), word).toEqual([...part.words].sort());
      }
      seen.push(...part.words);
    }
    // every subverb is in the table (one missing would still work, loading them all)
    expect(seen.filter((w) => w !== 'skctl').sort()).toEqual(full?.commands.map((c) => c.name()).sort());
    // no subverb, or one not in the table: all of them, for the listing and "did you mean"
    for (const args of [['sheets'], ['sheets', 'help', 'bridge'], ['sheets', 'brigde']]) {
      const sheets = (await programFor(args)).commands.find((c) => c.name() === 'sheets');
      expect(
        sheets?.commands.map((c) => c.name()),
        args.join(' '),
      ).toEqual(full?.commands.map((c) => c.name()));
    }
  });

  it('a mistyped verb still gets the "did you mean" hint', async () => {
    const r = await run(['statsu']);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/unknown command 'statsu'[\s\S]*status/);
  }, 60_000);
});

describe('hints name the command as the person runs it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-name-'));
  const launcher = join(dir, 'checkout', 'retrokube');
  mkdirSync(join(dir, 'checkout', 'sub'), { recursive: true });
  mkdirSync(join(dir, 'bin'));
  writeFileSync(launcher, '#!/bin/sh\n');

  it('./retrokube from the checkout, a relative path from below it', () => {
    expect(cliNameFor({ env: { PATH: '/usr/bin' }, cwd: join(dir, 'checkout'), launcher })).toBe(
      './retrokube',
    );
    expect(cliNameFor({ env: { PATH: '' }, cwd: join(dir, 'checkout', 'sub'), launcher })).toBe(
      '../retrokube',
    );
    // npm start: npm runs in the package root but says where the person was
    expect(
      cliNameFor({ env: { INIT_CWD: join(dir, 'checkout', 'sub') }, cwd: join(dir, 'checkout'), launcher }),
    ).toBe('../retrokube');
  });

  it('plain retrokube once the launcher is on PATH, or when there is no checkout', () => {
    symlinkSync(launcher, join(dir, 'bin', 'retrokube'));
    expect(cliNameFor({ env: { PATH: `/usr/bin:${join(dir, 'bin')}` }, cwd: dir, launcher })).toBe(
      'retrokube',
    );
    expect(cliNameFor({ env: {}, cwd: dir, launcher: join(dir, 'none') })).toBe('retrokube');
  });

  it("the checkout's launcher is the file at the repository's root", () => {
    expect(existsSync(CHECKOUT_LAUNCHER)).toBe(true);
  });
});

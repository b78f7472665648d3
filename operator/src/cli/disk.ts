// `retrokube disk ...`: the Oberon file system on .dsk images from the host, the base image,
// and `disk build-kube` (the Kube disk of machine/kube-disk.ts).
import { readFile, rename, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { BASE_IMAGE, findBaseImage } from '../machine/base-image.ts';
import type { BuildResult } from '../machine/builder/build.ts';
import { formatDate } from '../machine/fs/format.ts';
import { fromOberonText, toOberonText } from '../machine/fs/text.ts';
import { OberonVolume } from '../machine/fs/volume.ts';
import { buildKubeDisk, LIMITS as KUBE_DISK_LIMITS } from '../machine/kube-disk.ts';

function table(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows
    .map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]))).join('  '))
    .join('\n');
}

function outputFormat(o: string | undefined): 'table' | 'json' {
  if (o === undefined || o === 'table') return 'table';
  if (o === 'json') return 'json';
  throw new Error(`unknown output format "${o}"; use -o json or leave it out for a table`);
}

/** "8M", "8MiB", "64m", "1048576", "512K" → bytes. */
export function parseSize(text: string): number {
  const m = /^(\d+)\s*([kKmM]?)(i?[bB])?$/.exec(text.trim());
  if (!m) throw new Error(`size "${text}" is not a number of bytes or a size like 8M or 512K`);
  const unit = m[2].toLowerCase() === 'm' ? 1024 * 1024 : m[2].toLowerCase() === 'k' ? 1024 : 1;
  return Number(m[1]) * unit;
}

export function registerDiskVerbs(program: Command): void {
  const disk = program
    .command('disk')
    .description('Oberon disk images: list, read, write and delete files, grow, fetch the base image')
    .addHelpText(
      'after',
      '\nExamples:\n  retrokube disk base\n  retrokube disk ls my.dsk -o json\n  retrokube disk put my.dsk --text Hello.Mod\n',
    );

  disk
    .command('ls')
    .description('list the files on a disk image')
    .argument('<disk>', '.dsk image')
    .option('-o, --output <format>', 'json for machines')
    .option('--json', 'same as -o json')
    .addHelpText('after', '\nExample:\n  retrokube disk ls oberon.dsk -o json\n')
    .action(async (path: string, opts: { output?: string; json?: boolean }) => {
      const format = opts.json ? 'json' : outputFormat(opts.output);
      const files = (await OberonVolume.open(path)).list();
      if (format === 'json') {
        process.stdout.write(
          `${JSON.stringify(
            files.map(({ name, size, date }) => ({ name, size, date })),
            null,
            2,
          )}\n`,
        );
        return;
      }
      const rows = [
        ['NAME', 'SIZE', 'DATE'],
        ...files.map((f) => [f.name, String(f.size), formatDate(f.date)]),
      ];
      const total = files.reduce((n, f) => n + f.size, 0);
      process.stdout.write(`${table(rows)}\n${files.length} files, ${total} bytes\n`);
    });

  disk
    .command('get')
    .description('copy a file out of a disk image')
    .argument('<disk>', '.dsk image')
    .argument('<name>', 'Oberon file name')
    .option('--out <file>', 'where to write it ("-" for stdout; default: ./<name>)')
    .option('--text', 'an Oberon text: drop the formatting header and turn CR line ends into LF')
    .addHelpText('after', '\nExample:\n  retrokube disk get oberon.dsk System.Tool --text --out -\n')
    .action(async (path: string, name: string, opts: { out?: string; text?: boolean }) => {
      const data = (await OberonVolume.open(path)).read(name);
      const out = opts.text ? fromOberonText(data) : data;
      if (opts.out === '-') process.stdout.write(out);
      else await writeFile(opts.out ?? name, out);
    });

  disk
    .command('put')
    .description('copy host files onto a disk image (replacing files of the same name)')
    .argument('<disk>', '.dsk image')
    .argument('<files...>', 'host files; each keeps its base name unless --as is given')
    .option('--as <name>', 'Oberon name (only with one file)')
    .option('--text', 'turn LF line ends into CR, as Oberon texts have them')
    .option('--date <when>', '"now" stamps the current time; default 0 (no clock, like Oberon itself)')
    .addHelpText('after', '\nExample:\n  retrokube disk put oberon.dsk --text images/oberon/Boot.Mod\n')
    .action(async (path: string, files: string[], opts: { as?: string; text?: boolean; date?: string }) => {
      if (opts.as && files.length !== 1)
        throw new Error('--as names one file; give exactly one file with it');
      if (opts.date !== undefined && opts.date !== 'now' && opts.date !== '0') {
        throw new Error(`--date "${opts.date}" is not "now" or "0"`);
      }
      const { encodeDate } = await import('../machine/fs/format.ts');
      const date = opts.date === 'now' ? encodeDate(new Date()) : 0;
      const vol = await OberonVolume.open(path);
      for (const file of files) {
        const data = await readFile(file);
        vol.write(opts.as ?? basename(file), opts.text ? toOberonText(data) : data, date);
      }
      await vol.save(path);
    });

  disk
    .command('rm')
    .description('delete files from a disk image')
    .argument('<disk>', '.dsk image')
    .argument('<names...>', 'Oberon file names')
    .option('-f, --force', 'no error for files that do not exist')
    .addHelpText('after', '\nExample:\n  retrokube disk rm oberon.dsk Hello.Mod Hello.rsc\n')
    .action(async (path: string, names: string[], opts: { force?: boolean }) => {
      const vol = await OberonVolume.open(path);
      const missing = names.filter((n) => !vol.remove(n));
      await vol.save(path);
      if (missing.length > 0 && !opts.force)
        throw new Error(`no such file on ${path}: ${missing.join(', ')}`);
    });

  disk
    .command('grow')
    .description('grow a disk image (zero-filled) so Oberon can place new files past its old end')
    .argument('<disk>', '.dsk image')
    .argument('<size>', 'new size, e.g. 8M (at most 64M)')
    .addHelpText('after', '\nExample:\n  retrokube disk grow oberon.dsk 8M\n')
    .action(async (path: string, size: string) => {
      const vol = await OberonVolume.open(path);
      vol.grow(parseSize(size));
      await vol.save(path);
    });

  disk
    .command('check')
    .description('check a disk image the way Oberon would walk it at boot')
    .argument('<disk>', '.dsk image')
    .addHelpText('after', '\nExample:\n  retrokube disk check oberon.dsk\n')
    .action(async (path: string) => {
      const problems = (await OberonVolume.open(path)).check();
      if (problems.length > 0)
        throw new Error(`${path} has ${problems.length} problems:\n  ${problems.join('\n  ')}`);
      process.stdout.write(`${path}: consistent\n`);
    });

  disk
    .command('build')
    .description("compile Oberon sources with the base image's own compiler (ORP) into a bootable disk")
    .requiredOption('--out <file>', 'the disk to write')
    .option('--base <file>', 'base image (default: the one `retrokube disk base` finds)')
    .option('--file <file...>', 'extra host files copied onto the disk as they are')
    .option('--grow <size>', 'grow the result, e.g. 8M, so Oberon has room for new files')
    .option('-o, --output <format>', 'json for machines')
    .argument('<sources...>', 'X.Mod files, compiled in this order (imports first)')
    .addHelpText(
      'after',
      '\nExample:\n  retrokube disk build --out kube.dsk --grow 8M images/oberon/Kube.Mod images/oberon/Boot.Mod\n',
    )
    .action(
      async (
        sources: string[],
        opts: { out: string; base?: string; file?: string[]; grow?: string; output?: string },
      ) => {
        const format = outputFormat(opts.output);
        const basePath = opts.base ?? (await findBaseImage()).path;
        const growTo = opts.grow ? parseSize(opts.grow) : undefined;
        const texts = await Promise.all(
          sources.map(async (f) => ({ name: basename(f), text: (await readFile(f)).toString('latin1') })),
        );
        const files = await Promise.all(
          (opts.file ?? []).map(async (f) => ({ name: basename(f), data: await readFile(f) })),
        );
        const { buildDisk, CompileError } = await import('../machine/builder/build.ts'); // loads the emulator
        let result: BuildResult;
        try {
          result = buildDisk({ base: await readFile(basePath), sources: texts, files, growTo });
        } catch (err) {
          if (err instanceof CompileError && format === 'json') {
            process.stdout.write(
              `${JSON.stringify({ ok: false, file: err.file, module: err.module, messages: err.messages })}\n`,
            );
          }
          throw err;
        }
        const tmp = `${opts.out}.${process.pid}.tmp`;
        await writeFile(tmp, result.disk);
        await rename(tmp, opts.out);
        if (format === 'json') {
          const modules = result.modules.map((m) => ({ ...m, key: m.key.toString(16).padStart(8, '0') }));
          process.stdout.write(`${JSON.stringify({ ok: true, out: opts.out, modules }, null, 2)}\n`);
        } else {
          for (const m of result.modules) process.stdout.write(`${m.log}\n`);
          process.stdout.write(
            `wrote ${opts.out} (${result.disk.length} bytes, ${result.instructions} instructions)\n`,
          );
        }
      },
    );

  disk
    .command('base')
    .description(`find the Oberon base image (${BASE_IMAGE.fileName}) or download it into the user cache`)
    .option('--no-download', 'only look for local copies')
    .option('-o, --output <format>', 'json for machines')
    .addHelpText(
      'after',
      '\nLooks at $RETROKUBE_OBERON_BASE, $XDG_CACHE_HOME/retrokube/ (default ~/.cache/retrokube/), ../shared/oberon/ beside the\nrepository, then downloads (from $RETROKUBE_OBERON_BASE_URL if set) and checks the sha256.\n\nExample:\n  retrokube disk base -o json\n',
    )
    .action(async (opts: { download: boolean; output?: string }) => {
      const format = outputFormat(opts.output);
      let lastShown = -1;
      const found = await findBaseImage({
        download: opts.download,
        onProgress: (received, total) => {
          const pct = Math.min(100, Math.floor((received * 100) / total));
          if (pct !== lastShown && process.stderr.isTTY) process.stderr.write(`\rdownloading ${pct}%`);
          else if (pct !== lastShown && pct % 25 === 0) process.stderr.write(`downloading ${pct}%\n`);
          lastShown = pct;
        },
      });
      if (lastShown >= 0 && process.stderr.isTTY) process.stderr.write('\n');
      if (format === 'json') process.stdout.write(`${JSON.stringify(found)}\n`);
      else process.stdout.write(`${found.path}\t(${found.source}, sha256 ${found.sha256})\n`);
    });
}

export function registerKubeDiskVerbs(program: Command): void {
  const disk =
    program.commands.find((c) => c.name() === 'disk') ??
    program.command('disk').description('Oberon disk images');
  disk
    .command('build-kube')
    .description(
      'build the Kube disk: Kube, KubeNet, Pods, Ticker, Ticker2, Boot and a System that runs Boot',
    )
    .option('--out <file>', 'also copy the disk here')
    .option('--base <file>', 'base image (default: found or downloaded, see "retrokube disk base")')
    .option('--force', 'build again even if a cached disk matches')
    .option('-o, --output <format>', 'json for machines')
    .option('--json', 'same as -o json')
    .addHelpText(
      'after',
      '\nThe disk is cached in $XDG_CACHE_HOME/retrokube (default ~/.cache/retrokube) by a hash of the sources,\n' +
        'the base image and the builder, and reused while nothing changed.\n\nExample:\n  retrokube disk build-kube --out kube.dsk\n',
    )
    .action(async (o: { out?: string; base?: string; force?: boolean; output?: string; json?: boolean }) => {
      if (o.output !== undefined && o.output !== 'json' && o.output !== 'table') {
        throw new Error(`output format "${o.output}" is not known; use json or table`);
      }
      const r = await buildKubeDisk({ out: o.out, base: o.base, force: o.force });
      if (o.json || o.output === 'json') {
        process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `${r.path}  (${r.cached ? 'cached' : 'built'}; ${r.modules.join(', ')}; key ${r.key.slice(0, KUBE_DISK_LIMITS.cacheKeyChars)})\n`,
      );
    });
}

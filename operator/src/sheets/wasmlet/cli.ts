// `retrokube sheets wasmlet` — pull a WASM module from a cell, check its sha256, run it once.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { openWorkbook } from '../apiserver/open.ts';
import { sheetsGroup } from '../ctl/verbs.ts';
import { pullModule, putModule, runOnce, WasmletError } from './wasmlet.ts';

interface Flags {
  store: string;
  name: string;
  put?: string;
  googleCredentials?: string;
  googleRootUrl?: string;
}

export function registerWasmletVerb(program: Command): void {
  sheetsGroup(program)
    .command('wasmlet')
    .description(
      'run a WASM module straight from a spreadsheet cell (the Wasm tab), after checking its sha256',
    )
    .requiredOption('--store <sheet>', 'the workbook: an .xlsx file or google:<spreadsheetId>')
    .requiredOption('--name <name>', 'the module row to run, e.g. hello:v1')
    .option('--put <file.wasm>', 'store this module under --name first (digest computed here)')
    .option('--google-credentials <file>', 'credentials JSON for a google: store')
    .option('--google-root-url <url>', 'Sheets API root URL (an emulator)')
    .argument('[args...]', 'arguments for the module')
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets wasmlet --store cluster.xlsx --name hello:v1 -- world\n',
    )
    .action(async (args: string[], o: Flags) => {
      const store = await openWorkbook(o.store, {
        googleCredentials: o.googleCredentials,
        googleRootUrl: o.googleRootUrl,
      });
      try {
        if (o.put) await putModule(store, o.name, await readFile(o.put));
        const mod = pullModule(store.tabs().includes('Wasm') ? store.rows('Wasm') : undefined, o.name);
        process.stdout.write(
          `[wasmlet] pulled ${mod.name} from a spreadsheet cell (${mod.bytes.length} bytes), sha256 OK\n[wasmlet] running via node:wasi (no Docker):\n`,
        );
        process.exitCode = await runOnce(mod, args, (s) => process.stdout.write(s));
      } catch (e) {
        if (!(e instanceof WasmletError)) throw e;
        process.stdout.write(`[wasmlet] ${e.message}\n`);
        process.exitCode = 1;
      } finally {
        await store.close();
      }
    });
}

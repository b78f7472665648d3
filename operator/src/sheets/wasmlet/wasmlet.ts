// wasmlet (spec §9.4): a WASM module kept whole in one cell of the `Wasm` tab
// (`name | digest | bytes | data_b64`), checked against its sha256 and run once through the node
// agent's own wasm runtime (WASI preview1 in a worker thread, no filesystem given to the module).
// Running code that came from a sheet is opted into by name: the person names the module.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WA, WasmRuntime } from '../node/runtimes/wasm.ts';
import type { TabSchema } from '../store/schema.ts';
import type { Row, Store } from '../store/types.ts';

export const WASM_TAB: TabSchema = {
  name: 'Wasm',
  headers: ['name', 'digest', 'bytes', 'data_b64'],
  key: ['name'],
};

export const LIMITS = {
  maxRows: 999, // the reference reads A1:D1000
} as const;

export class WasmletError extends Error {
  override name = 'WasmletError';
}

export interface PulledModule {
  name: string;
  bytes: Uint8Array;
  digest: string;
}

/** Finds the module's row and verifies it; every failure says what is wrong and how to fix it. */
export function pullModule(rows: Row[] | undefined, name: string): PulledModule {
  if (!rows)
    throw new WasmletError(
      `the sheet has no Wasm tab (headers: ${WASM_TAB.headers.join(' | ')}); put the module there first`,
    );
  const row = rows.slice(0, LIMITS.maxRows).find((r) => String(r.name ?? '') === name);
  if (!row)
    throw new WasmletError(
      `module '${name}' is not in the Wasm tab (names: ${rows.map((r) => r.name).join(', ') || 'none'})`,
    );
  const b64 = String(row.data_b64 ?? '');
  if (!b64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64))
    throw new WasmletError(`module '${name}': data_b64 is empty or not base64`);
  const bytes = Buffer.from(b64, 'base64');
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  const want = String(row.digest ?? '').trim();
  if (want !== digest)
    throw new WasmletError(
      `module '${name}': digest MISMATCH (the sheet says ${want || 'nothing'}, the bytes hash to ${digest}); refusing to run it`,
    );
  if (!WA.validate(bytes))
    throw new WasmletError(`module '${name}': the bytes are not a valid WebAssembly module`);
  return { name, bytes, digest };
}

/** Writes (or replaces) a module row; for tests and for people filling the tab from a file. */
export async function putModule(store: Store, name: string, bytes: Uint8Array): Promise<void> {
  const data_b64 = Buffer.from(bytes).toString('base64');
  if (data_b64.length > store.limits.maxCellChars)
    throw new WasmletError(
      `module '${name}' is ${bytes.length} bytes = ${data_b64.length} base64 chars; one ${store.backend} cell holds ${store.limits.maxCellChars}`,
    );
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  await store.transact((tx) => {
    tx.ensureTab(WASM_TAB);
    tx.upsert('Wasm', { name, digest, bytes: bytes.length, data_b64 });
  });
}

/** Runs the module once; its stdout/stderr go to `write`. Resolves with its exit code. */
export async function runOnce(
  mod: PulledModule,
  args: string[],
  write: (s: string) => void,
): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wasmlet-'));
  const logFile = path.join(dir, 'out.log');
  try {
    const run = await new WasmRuntime().start({
      pod: 'wasmlet',
      node: os.hostname(),
      deployment: mod.name,
      image: mod.name,
      command: args.join(' '),
      env: {},
      cpuReq: 0,
      memReq: 0,
      ports: [],
      specHash: mod.digest,
      secretFiles: [],
      logFile,
      module: mod.bytes,
    });
    const exit = await run.exited;
    write(await readFile(logFile, 'utf8').catch(() => ''));
    if (exit.message && exit.code !== 0) write(`[wasmlet] ${exit.message}\n`);
    return exit.code;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

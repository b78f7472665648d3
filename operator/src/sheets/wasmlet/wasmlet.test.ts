// wasmlet as a person runs it: a real `retrokube` process, a real xlsx workbook, the node agent's
// wasm runtime.
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helloWasm } from '../images/wasm-hello.ts';
import { openXlsxStore } from '../store/xlsx.ts';
import { pullModule } from './wasmlet.ts';

const run = promisify(execFile);
const MAIN = new URL('../../cli/main.ts', import.meta.url).pathname;
async function wasmlet(...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const r = await run(process.execPath, [MAIN, 'sheets', 'wasmlet', ...args], { timeout: 60_000 });
    return { code: 0, stdout: r.stdout };
  } catch (e) {
    const x = e as { code?: number; stdout?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '' };
  }
}

let tmp: string;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-wasmlet-'));
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

describe('retrokube sheets wasmlet', () => {
  it('pulls a module from a cell, checks its sha256 and runs it once, passing its exit code on', async () => {
    const wb = path.join(tmp, 'wasm.xlsx');
    const mod = path.join(tmp, 'hello.wasm');
    await fsp.writeFile(mod, helloWasm('hello from a cell\n', 3));
    const r = await wasmlet('--store', wb, '--name', 'hello:v1', '--put', mod);
    expect(r.stdout).toContain(
      `[wasmlet] pulled hello:v1 from a spreadsheet cell (${(await fsp.stat(mod)).size} bytes), sha256 OK`,
    );
    expect(r.stdout).toContain('hello from a cell\n');
    expect(r.code).toBe(3);
    // tamper with the cell: the digest no longer matches and nothing runs
    const store = await openXlsxStore(wb);
    const row = store.get('Wasm', 'hello:v1');
    const evil = Buffer.from(helloWasm('evil\n')).toString('base64');
    await store.transact((tx) => tx.update('Wasm', 'hello:v1', { data_b64: evil }));
    await store.close();
    expect(row?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const bad = await wasmlet('--store', wb, '--name', 'hello:v1');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('digest MISMATCH');
    expect(bad.stdout).not.toContain('evil');
    const missing = await wasmlet('--store', wb, '--name', 'nope:v1');
    expect(missing.stdout).toContain("module 'nope:v1' is not in the Wasm tab");
  }, 120_000);

  it('says what is wrong with a sheet without the tab or with garbage in the cell', () => {
    expect(() => pullModule(undefined, 'x')).toThrow(/no Wasm tab/);
    expect(() => pullModule([{ name: 'x', digest: 'sha256:00', data_b64: '!!' }], 'x')).toThrow(/not base64/);
  });
});

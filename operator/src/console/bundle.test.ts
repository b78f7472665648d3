// The page bundle (bundle.ts) as the browser gets it: esbuild resolves no Node builtin from the
// page or the lab's machine worker (machine/machine.ts, cpu.ts and what they import run in the
// browser), and the worker bundle runs a machine with no Node globals at all.
import fs from 'node:fs';
import vm from 'node:vm';
import { transform } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { BASE_IMAGE } from '../machine/test-disk.ts';
import { pageFiles } from './bundle.ts';
import type { FromLabWorker, ToLabWorker } from './page/worker-protocol.ts';

describe('the console page bundle', () => {
  it('builds for the browser: no module of the page or the machine worker imports a Node builtin', async () => {
    // esbuild (platform 'browser') fails with 'Could not resolve "node:fs"' and the importing file.
    const files = await pageFiles('console');
    expect([...files.keys()].sort()).toEqual(
      ['/app.js', '/favicon.ico', '/favicon.svg', '/index.html', '/worker.js'].sort(),
    );
  }, 60_000);

  it('the machine worker boots Oberon with only a browser worker’s globals (no process, require or Buffer)', async () => {
    const worker = (await pageFiles('console')).get('/worker.js');
    if (worker === undefined) throw new Error('no /worker.js in the page');
    // The bundle is an ES module; as a classic script it runs in a context of its own.
    const script = (await transform(worker.body.toString('utf8'), { format: 'iife', loader: 'js' })).code;
    const posted: FromLabWorker[] = [];
    const self: {
      postMessage(m: FromLabWorker): void;
      onmessage: ((e: { data: ToLabWorker }) => void) | null;
    } = {
      postMessage: (m) => posted.push(m),
      onmessage: null,
    };
    const context = vm.createContext({
      self,
      performance,
      setTimeout,
      clearTimeout,
      console,
      TextDecoder,
      TextEncoder,
    });
    vm.runInContext(script, context);
    expect(vm.runInContext('typeof process', context)).toBe('undefined');
    const send = (m: ToLabWorker) => self.onmessage?.({ data: m });
    const disk = fs.readFileSync(BASE_IMAGE);
    send({
      t: 'init',
      disk: disk.buffer.slice(disk.byteOffset, disk.byteOffset + disk.length),
      commands: '',
    });
    try {
      // The worker's own timers boot it (interpreter, then translated blocks: WebAssembly).
      const deadline = Date.now() + 30_000;
      while (!posted.some((m) => m.t === 'booted' || m.t === 'error') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
    } finally {
      send({ t: 'power', on: false });
    }
    expect(posted.filter((m) => m.t === 'error')).toEqual([]);
    expect(posted.some((m) => m.t === 'booted')).toBe(true);
  }, 60_000);
});

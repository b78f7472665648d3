// The CLI verbs as a person runs them: real `retrokube` processes.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../apiserver/server.ts';
import { helloWasm } from '../images/wasm-hello.ts';
import { MemoryStore } from '../store/memory.ts';

const run = promisify(execFile);
const MAIN = new URL('../../cli/main.ts', import.meta.url).pathname;
const cli = (...args: string[]) => run(process.execPath, [MAIN, ...args], { timeout: 120_000 });

let tmp: string;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-cli-'));
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

describe('retrokube sheets image', () => {
  it('imports a WASM module into a workbook, lists it, and exports the identical bytes', async () => {
    const wb = path.join(tmp, 'img.xlsx');
    const mod = path.join(tmp, 'hello.wasm');
    await fsp.writeFile(mod, helloWasm('hi\n'));
    const imp = await cli(
      'sheets',
      'image',
      'import',
      mod,
      '--name',
      'hi:v1',
      '--workbook',
      wb,
      '-o',
      'json',
    );
    expect(JSON.parse(imp.stdout)).toMatchObject({ name: 'hi:v1', size: (await fsp.stat(mod)).size });
    const ls = JSON.parse((await cli('sheets', 'image', 'ls', '--workbook', wb, '-o', 'json')).stdout);
    expect(ls.map((i: { name: string }) => i.name)).toEqual(['hi:v1']);
    const out = path.join(tmp, 'back.wasm');
    await cli('sheets', 'image', 'export', 'hi:v1', '--out', out, '--workbook', wb);
    expect((await fsp.readFile(out)).equals(await fsp.readFile(mod))).toBe(true);
    await expect(cli('sheets', 'image', 'export', 'nope:v1', '--out', out, '--workbook', wb)).rejects.toThrow(
      /not in the Images tab/,
    );
  }, 180_000);
});

describe('retrokube sheets node', () => {
  it('joins the cluster, runs its pods, and stops them on SIGTERM', async () => {
    const store = new MemoryStore();
    const server = await createApiServer({
      store,
      token: 'cli-token',
      samples: false,
      metricsIntervalSec: 3600,
    });
    const url = (await server.listen(0, '127.0.0.1')).replace('[::1]', '127.0.0.1');
    await store.transact((tx) =>
      tx.upsert('Deployments', {
        name: 'svc',
        image: 'process',
        replicas: 1,
        cpu_req: 100,
        mem_req: 16,
        command: 'sleep 60',
      }),
    );
    let agent: ChildProcess | undefined;
    try {
      agent = spawn(
        process.execPath,
        [
          MAIN,
          'sheets',
          'node',
          '--server',
          url,
          '--name',
          'cli-node',
          '--runtime',
          'process',
          '--allow-process',
          '--interval',
          '1',
          '--work-dir',
          tmp,
        ],
        // The token travels in the environment, never in argv (ps shows argv to every user).
        { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TOKEN: 'cli-token' } },
      );
      let stderr = '';
      agent.stderr?.on('data', (b: Buffer) => {
        stderr += b.toString();
      });
      const end = Date.now() + 30_000;
      let pid = 0;
      while (Date.now() < end) {
        const p = store.get('Pods', 'svc-1');
        if (p?.node === 'cli-node' && String(p.container_id ?? '').startsWith('proc-')) {
          pid = Number(String(p.container_id).slice(5));
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(pid).toBeGreaterThan(0);
      expect(() => process.kill(pid, 0)).not.toThrow();
      expect(stderr).toMatch(/WARNING: the process runtime is ON \(--allow-process\)/);
      const exited = new Promise<number | null>((r) => agent!.once('exit', (c) => r(c)));
      agent.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(() => process.kill(pid, 0)).toThrow(); // the pod went with its agent
    } finally {
      agent?.kill('SIGKILL');
      await server.close();
    }
  }, 60_000);

  it('#17.1 by default runs no command from the sheet: a "process" deployment stays Pending, nothing runs', async () => {
    const store = new MemoryStore();
    const server = await createApiServer({
      store,
      token: 'cli-token',
      samples: false,
      metricsIntervalSec: 3600,
    });
    const url = (await server.listen(0, '127.0.0.1')).replace('[::1]', '127.0.0.1');
    const proof = path.join(tmp, 'ran-a-command');
    await store.transact((tx) =>
      tx.upsert('Deployments', {
        name: 'evil',
        image: 'process',
        replicas: 1,
        cpu_req: 1,
        mem_req: 1,
        command: `id > ${proof}`,
      }),
    );
    let agent: ChildProcess | undefined;
    try {
      agent = spawn(
        process.execPath,
        [MAIN, 'sheets', 'node', '--server', url, '--name', 'plain', '--interval', '1'],
        {
          stdio: ['ignore', 'ignore', 'ignore'],
          env: { ...process.env, TOKEN: 'cli-token' },
        },
      );
      const end = Date.now() + 30_000;
      let message = '';
      // The scheduler's own Pending words ("waiting for plain's agent …") come first; the agent's reason replaces them.
      while (Date.now() < end && !/needs the process runtime/.test(message)) {
        message = String(store.get('Pods', 'evil-1')?.message ?? '');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(message).toMatch(/needs the process runtime/);
      expect(store.get('Pods', 'evil-1')?.phase).toBe('Pending');
      await expect(fsp.access(proof)).rejects.toThrow();
    } finally {
      agent?.kill('SIGKILL');
      await server.close();
    }
    // Asking for the runtime without the named opt-in is refused, saying how to opt in.
    await expect(cli('sheets', 'node', '--server', url, '--runtime', 'wasm,process')).rejects.toThrow(
      /--allow-process/,
    );
  }, 60_000);

  it('explains a bad argument and exits non-zero', async () => {
    await expect(cli('sheets', 'node', '--server', 'ftp://x', '--name', 'n')).rejects.toThrow(
      /must be an http/,
    );
    await expect(cli('sheets', 'node', '--server', 'http://127.0.0.1:1', '--runtime', 'lxc')).rejects.toThrow(
      /choose from wasm, process, docker/,
    );
  });
});

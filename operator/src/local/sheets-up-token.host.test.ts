// #28.1: `sheets up --allow-process` must not run with the well-known token. Probed as the issue
// did: another local user (uid 65534) posts an apply of a "process" deployment with the well-known
// token; before the fix the agent (root) ran its command. Now the cluster has a generated token in a
// 0600 file, the well-known one is refused, and a node agent refuses to offer process with it.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TOKEN } from '../sheets/default-token.ts';
import { asNobody, curlAsNobody } from '../util/other-user.testkit.ts';

const MAIN = join(import.meta.dirname, '../cli/main.ts');
const run = promisify(execFile);
let dir: string;
let up: ChildProcess;
let url = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rk-up-token-'));
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
  delete env.TOKEN;
  delete env.SIGNING_KEY;
  up = spawn(
    process.execPath,
    [MAIN, 'sheets', 'up', '--allow-process', '--nodes', '1', '--port', '0', '--no-console', '--wait', '0'],
    { cwd: dir, env },
  );
  let log = '';
  url = await new Promise<string>((resolve, reject) => {
    const seen = (b: Buffer) => {
      log += b.toString();
      const m = /apiserver listening on (\S+)/.exec(log);
      if (m && log.includes('running; try')) resolve(m[1]);
    };
    up.stdout?.on('data', seen);
    up.stderr?.on('data', seen);
    up.on('exit', (c) => reject(new Error(`sheets up exited (${c}):\n${log}`)));
  });
}, 120_000);

afterAll(async () => {
  if (up && up.exitCode === null) {
    const gone = new Promise((r) => up.once('exit', r));
    up.kill('SIGTERM');
    await gone;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('#28.1 a command runtime never runs with the well-known token', () => {
  it('generates a private token and key, and refuses the well-known token from another user', async () => {
    const tokenFile = join(dir, 'cluster.xlsx.token');
    const keyFile = join(dir, 'cluster.xlsx.key');
    for (const f of [tokenFile, keyFile]) expect(statSync(f).mode & 0o777).toBe(0o600);
    expect((await asNobody(['cat', tokenFile])).code).not.toBe(0);

    const proof = join(dir, 'pwned');
    const body = JSON.stringify({
      action: 'apply',
      token: DEFAULT_TOKEN,
      deployments: [
        { name: 'pwn', image: 'process', replicas: 1, cpu_req: 1, mem_req: 1, command: `id > ${proof}` },
      ],
    });
    const r = await curlAsNobody(['-X', 'POST', '-H', 'Content-Type: application/json', '--data', body, url]);
    expect(r.status).toBe(401);
    // The deployment was never written, so no node can ever run it.
    const pods = await run(
      process.execPath,
      [
        MAIN,
        'skctl',
        '--server',
        url,
        '--token-file',
        tokenFile,
        '--key-file',
        keyFile,
        'get',
        'deployments',
      ],
      { timeout: 60_000 },
    );
    expect(pods.stdout).toContain('ticker');
    expect(pods.stdout).not.toContain('pwn');
    expect(existsSync(proof)).toBe(false);
  });

  it('a node agent refuses to offer the process runtime with the well-known token', async () => {
    const r = await run(
      process.execPath,
      [MAIN, 'sheets', 'node', '--server', url, '--name', 'x', '--allow-process'],
      {
        env: { ...process.env, TOKEN: DEFAULT_TOKEN },
        timeout: 60_000,
      },
    ).catch((e: { code: number; stderr: string }) => e);
    expect(r).toMatchObject({ code: 1 });
    expect((r as { stderr: string }).stderr).toMatch(/well-known default token cannot be used/);
  });
});

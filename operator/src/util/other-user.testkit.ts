// The attacker of issue #28 as the probe was: another local user (uid/gid 65534, "nobody") on this
// host, through setpriv (util-linux). The security tests that need it are host tests (*.host.test.ts):
// switching users needs root, which the set-up's machine has; elsewhere they fail with this reason.
import { spawn } from 'node:child_process';

export const NOBODY = 65534;

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs ARGV as uid/gid 65534 with no supplementary groups; resolves when it exits (or after timeoutMs). */
export function asNobody(argv: string[], timeoutMs = 30_000): Promise<Ran> {
  if (process.getuid?.() !== 0)
    throw new Error('this test acts as another local user (uid 65534) through setpriv: run it as root');
  return new Promise((resolve, reject) => {
    const p = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', ...argv]);
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
    });
    p.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

/** curl as uid 65534: the HTTP status code of one request (0 when it could not connect). */
export async function curlAsNobody(args: string[]): Promise<{ status: number; body: string }> {
  const r = await asNobody(['curl', '-s', '-w', '\n%{http_code}', ...args]);
  const lines = r.stdout.split('\n');
  const status = Number(lines.pop() ?? '0');
  return { status, body: lines.join('\n') };
}

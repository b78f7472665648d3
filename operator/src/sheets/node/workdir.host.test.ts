// #28.6: the node agent's work folder, probed as the issue did: another local user (uid 65534)
// pre-creates the agent's default folder (world-writable, a 0666 file where a secret would go, a
// link where a pod log would go) before a root agent starts. Before the fix the agent used that
// folder as it found it: the other user read the secret, and root appended through the link.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { asNobody } from '../../util/other-user.testkit.ts';
import { NodeAgent } from './agent.ts';
import { openFresh, openLog, privateWorkDir } from './workdir.ts';

const name = `probe-${randomBytes(4).toString('hex')}`;
const squatted = [path.join(os.tmpdir(), `sk-node-${name}`), path.join(os.tmpdir(), `sk-node-0-${name}`)];
const own = mkdtempSync(path.join(os.tmpdir(), 'rk-workdir-'));
const target = path.join(own, 'root-only');
const made: string[] = [];

afterAll(() => {
  for (const d of [...squatted, ...made, own]) rmSync(d, { recursive: true, force: true });
});

describe('#28.6 the node work folder is private', () => {
  it('never uses a folder another user made, and never writes through their link', async () => {
    writeFileSync(target, 'root\n', { mode: 0o600 });
    for (const d of squatted) {
      const r = await asNobody([
        'sh',
        '-c',
        `umask 0; mkdir -m 777 ${d} ${d}/logs ${d}/secrets ${d}/done && ln -s ${target} ${d}/logs/leak-1.log && : > ${d}/secrets/leak-1.s && chmod 666 ${d}/secrets/leak-1.s`,
      ]);
      expect(r.code, r.stderr).toBe(0);
    }
    const agent = new NodeAgent({ server: 'http://127.0.0.1:9', token: 't', name, runtimes: [] });
    const log = agent.logFile('leak-1');
    const dir = path.dirname(path.dirname(log));
    made.push(dir);
    for (const d of squatted) expect(log.startsWith(`${d}/`)).toBe(false);
    const st = lstatSync(dir);
    expect([st.uid, st.mode & 0o777]).toEqual([0, 0o700]);

    const fd = openLog(log);
    writeSync(fd, 'pod output\n');
    closeSync(fd);
    expect(lstatSync(log).mode & 0o777).toBe(0o600);
    expect(readFileSync(target, 'utf8')).toBe('root\n');
    expect((await asNobody(['cat', log])).code).not.toBe(0);
  });

  it('opens no pod log or secret file through a link, and never uses a folder of another user as it is', async () => {
    const link = path.join(own, 'l.log');
    symlinkSync(target, link);
    expect(() => openLog(link)).toThrow(/ELOOP/);
    const fd = openFresh(link); // replaces the link by a new file: the target is untouched
    closeSync(fd);
    expect(lstatSync(link).isSymbolicLink()).toBe(false);
    expect(readFileSync(target, 'utf8')).toBe('root\n');

    const open = path.join(os.tmpdir(), `sk-open-${name}`);
    made.push(open);
    await asNobody(['mkdir', '-m', '777', open]);
    const inside = privateWorkDir(open, name); // another user's folder: a private one of ours inside it
    expect(path.dirname(inside)).toBe(open);
    expect([lstatSync(inside).uid, lstatSync(inside).mode & 0o777]).toEqual([0, 0o700]);
  });
});

import { describe, expect, it } from 'vitest';
import { parseHostPort } from './machine.ts';

describe('retrokube machine run arguments', () => {
  it('reads --air as HOST:PORT, with brackets for IPv6', () => {
    expect(parseHostPort('relay.default.svc:7524')).toEqual({ host: 'relay.default.svc', port: 7524 });
    expect(parseHostPort('[::1]:9')).toEqual({ host: '::1', port: 9 });
  });

  it('rejects an --air without a valid port, saying what it expects', () => {
    expect(() => parseHostPort('relay')).toThrow(/HOST:PORT/);
    expect(() => parseHostPort('relay:70000')).toThrow(/HOST:PORT/);
  });
});

describe('#17.9 the key from keySecretRef is checked as hex before it reaches the boot line', () => {
  it('machine run refuses a key that would add Oberon commands, saying where to fix it', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const main = new URL('./main.ts', import.meta.url).pathname;
    const r = promisify(execFile)(
      process.execPath,
      [main, 'machine', 'run', '/nonexistent.dsk', '--commands', 'KubeNet.Serve kube $(RK_KEY)'],
      { env: { ...process.env, RK_KEY: '00;System.Directory *' }, timeout: 60_000 },
    );
    await expect(r).rejects.toThrow(/RK_KEY .*is not 0-16 hex digits/);
  }, 60_000);

  it('expands a hex key (any case) and nothing else', async () => {
    const { expandKeyReference } = await import('../machine/boot-key.ts');
    expect(expandKeyReference('KubeNet.Serve kube $(RK_KEY)', { RK_KEY: '00C0FFEE\n' })).toBe(
      'KubeNet.Serve kube 00c0ffee',
    );
    expect(expandKeyReference('Kube.Start', { RK_KEY: 'x;y' })).toBe('Kube.Start'); // not referenced
    for (const bad of ['00;Sys.X', '0 1', '00000000000000000', 'g'])
      expect(() => expandKeyReference('KubeNet.Join a b $(RK_KEY)', { RK_KEY: bad }), bad).toThrow(/hex/);
  });
});

describe('#17.4 machine run --vnc-password-file / RK_VNC_PASSWORD', () => {
  it('takes 1-8 printable characters and refuses anything else', async () => {
    const { vncPassword } = await import('./machine.ts');
    expect(vncPassword({}, {})).toBeUndefined();
    expect(vncPassword({}, { RK_VNC_PASSWORD: 'pw' })).toBe('pw');
    expect(() => vncPassword({}, { RK_VNC_PASSWORD: 'ninechars' })).toThrow(/1-8 printable/);
    expect(() => vncPassword({}, { RK_VNC_PASSWORD: 'a\nb' })).toThrow(/1-8 printable/);
  });
});

describe('#28.2/#28.11 machine run --vnc has a password by default', () => {
  it('generates one (0600, reused), serves None only on request and only on loopback unless --insecure-vnc', async () => {
    const { mkdtempSync, statSync, readFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { vncAccess } = await import('./machine.ts');
    const home = mkdtempSync(join(tmpdir(), 'rk-vnc-'));
    try {
      const env = { XDG_CONFIG_HOME: home };
      const a = vncAccess({ vncHost: '127.0.0.1' }, env);
      const file = join(home, 'retrokube', 'vnc-password');
      expect(a.password).toMatch(/^[\x20-\x7e]{8}$/);
      expect(a.note).toContain(file);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8').trim()).toBe(a.password);
      expect(vncAccess({ vncHost: '127.0.0.1' }, env).password).toBe(a.password); // the same next time
      const warned: string[] = [];
      const none = vncAccess({ vncHost: '127.0.0.1', vncNoPassword: true }, env, (l) => warned.push(l));
      expect(none.password).toBeUndefined();
      expect(warned.join('')).toMatch(/WARNING: VNC without a password/);
      expect(() => vncAccess({ vncHost: '0.0.0.0', vncNoPassword: true }, env)).toThrow(/--insecure-vnc/);
      expect(
        vncAccess({ vncHost: '0.0.0.0', vncNoPassword: true, insecureVnc: true }, env, () => {}).password,
      ).toBeUndefined();
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

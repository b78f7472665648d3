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

import { describe, expect, it } from 'vitest';
import { allowedHosts, checkRequest } from './guard.ts';
import { checkCommand } from './server.ts';

describe('console guard', () => {
  const hosts = allowedHosts('127.0.0.1', 8080);
  it('lets the page it served in, under any loopback name', () => {
    for (const host of ['127.0.0.1:8080', 'localhost:8080', '[::1]:8080'])
      expect(checkRequest({ host, origin: `http://${host}` }, hosts)).toEqual({ ok: true });
    expect(checkRequest({ host: '127.0.0.1:8080' }, hosts)).toEqual({ ok: true }); // curl, no Origin
  });
  it('refuses another origin, another host name (DNS rebinding) and another port', () => {
    const bad = [
      { host: '127.0.0.1:8080', origin: 'http://evil.example' },
      { host: '127.0.0.1:8080', origin: 'http://127.0.0.1:9999' },
      { host: '127.0.0.1:8080', origin: 'null' },
      { host: 'evil.example:8080' },
      { host: '127.0.0.1:9999' },
      {},
    ];
    for (const h of bad) {
      const v = checkRequest(h, hosts);
      expect(v.ok, JSON.stringify(h)).toBe(false);
      expect(v.why).toMatch(/may not use this console|is not this console/);
    }
  });
  it('a console bound elsewhere accepts only that address', () => {
    const h = allowedHosts('10.0.0.5', 80);
    expect(checkRequest({ host: '10.0.0.5:80' }, h).ok).toBe(true);
    expect(checkRequest({ host: 'localhost:80' }, h).ok).toBe(false);
  });
});

describe('the command box', () => {
  it('takes one Oberon command', () => {
    expect(checkCommand(' Kube.Apply web 6 Ticker2 ')).toBe('Kube.Apply web 6 Ticker2');
    expect(checkCommand('System.Directory *.Mod')).toBe('System.Directory *.Mod');
  });
  it('refuses what is not one command, saying what would be', () => {
    for (const bad of ['', 'rm -rf /', 'Kube.Apply web 4 Ticker\nSystem.Free', 'x'.repeat(200), 42])
      expect(() => checkCommand(bad)).toThrow(/Oberon command|must be text/);
  });
});

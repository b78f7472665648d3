import { describe, expect, it } from 'vitest';
import { checkCommand } from './server.ts';

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

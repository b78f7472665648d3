import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readUpState, removeUpState, requireUp, stateDir, stateKey, writeUpState } from './state.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-state-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the state folder of retrokube up', () => {
  it('is --state, else $RETROKUBE_STATE, else $XDG_STATE_HOME/retrokube, else ./.retrokube', () => {
    expect(stateDir('/x/y', { RETROKUBE_STATE: '/a' })).toBe('/x/y');
    expect(stateDir(undefined, { RETROKUBE_STATE: '/a', XDG_STATE_HOME: '/s' })).toBe('/a');
    expect(stateDir(undefined, { XDG_STATE_HOME: '/s' })).toBe('/s/retrokube');
    expect(stateDir(undefined, {})).toBe(resolve('.retrokube'));
  });

  it('keeps one generated key, readable only by its owner', () => {
    const k = stateKey(dir);
    expect(k).toMatch(/^[0-9a-f]{16}$/);
    expect(stateKey(dir)).toBe(k);
    expect(statSync(join(dir, 'key')).mode & 0o077).toBe(0);
  });

  it('finds a running up only while its process lives', () => {
    const st = {
      pid: process.pid,
      control: 'http://127.0.0.1:1',
      air: { port: 1, control: 'http://127.0.0.1:2' },
      cluster: 'kube',
      machines: [],
      startedAt: new Date().toISOString(),
    };
    writeUpState(dir, st);
    expect(readUpState(dir)?.air.control).toBe('http://127.0.0.1:2');
    writeUpState(dir, { ...st, pid: 2 ** 22 + 12345 }); // no such process
    expect(readUpState(dir)).toBeNull();
    expect(() => requireUp(dir)).toThrow(/no running "retrokube up" found/);
    removeUpState(dir);
    expect(readUpState(dir)).toBeNull();
  });
});

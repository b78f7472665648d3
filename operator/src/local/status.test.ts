import { describe, expect, it } from 'vitest';
import type { UpState } from './state.ts';
import { formatStatus } from './status.ts';

const st: UpState = {
  pid: 42,
  control: 'http://127.0.0.1:40001',
  air: { host: '127.0.0.1', port: 40002, control: 'http://127.0.0.1:40003', keyFile: '/s/key' },
  cluster: 'kube',
  machines: [
    { name: 'plane', role: 'plane', vnc: 5900, disk: '/s/plane.dsk' },
    { name: 'node-a', role: 'node', vnc: null, disk: '/s/node-a.dsk' },
  ],
  sheets: { url: 'http://127.0.0.1:40004' },
  console: 'http://127.0.0.1:40005/',
  startedAt: '2026-12-01T16:00:00.000Z',
};

describe('retrokube status', () => {
  it('names every address of the running up, runnable hints included', () => {
    const text = formatStatus(st, '/s', './retrokube');
    expect(text.split('\n')).toEqual([
      'retrokube up: pid 42, started 2026-12-01T16:00:00.000Z, state in /s',
      'web console  http://127.0.0.1:40005/  (loopback only)',
      'apiserver    http://127.0.0.1:40004  (./retrokube skctl get pods)',
      'air          udp/127.0.0.1:40002, control http://127.0.0.1:40003 (cluster kube)',
      'up control   http://127.0.0.1:40001',
      'plane        plane, VNC 127.0.0.1:5900, disk /s/plane.dsk',
      'node-a       node, no VNC, disk /s/node-a.dsk',
    ]);
    expect(text).not.toMatch(/key/i);
  });
});

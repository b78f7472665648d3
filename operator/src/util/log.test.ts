import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './log.ts';

describe('structured logs', () => {
  it('never print a field named key, token or secret', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger(sink, 'info');
    log.info({ key: '0123456789abcdef', cluster: { key: 'ffee' }, token: 'tok-1', node: 'node-a' }, 'joined');
    const out = lines.join('');
    expect(out).not.toMatch(/0123456789abcdef|ffee|tok-1/);
    expect(JSON.parse(out)).toMatchObject({ node: 'node-a', msg: 'joined', key: '[redacted]' });
  });

  it('run on Node 24, the runtime the project targets', () => {
    expect(process.versions.node.split('.')[0]).toBe('24');
  });
});

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

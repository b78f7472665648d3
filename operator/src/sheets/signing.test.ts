import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  LIMITS,
  ReplayCache,
  RequestVerifier,
  SIGNATURE_HEADER,
  sign,
  signRequest,
  TIMESTAMP_HEADER,
  verifySignature,
} from './signing.ts';

const KEY = 'k3y';
const NOW = 1_800_000_000;

describe('HMAC signing (spec §6)', () => {
  it('signs lowercase hex HMAC-SHA256 over "<ts>.<raw body>", the same bytes the reference signs', () => {
    const body = '{"token":"t","action":"scale"}';
    const expected = createHmac('sha256', KEY).update(`${NOW}.${body}`).digest('hex');
    expect(sign(KEY, String(NOW), body)).toBe(expected);
    expect(signRequest(KEY, body, NOW)).toEqual({
      [TIMESTAMP_HEADER]: String(NOW),
      [SIGNATURE_HEADER]: expected,
    });
  });

  it('accepts a round trip and rejects a tampered body, a wrong key, missing parts and a non-integer timestamp', () => {
    const h = signRequest(KEY, 'body', NOW);
    expect(verifySignature(KEY, h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER], 'body', NOW)).toEqual({ ok: true });
    expect(verifySignature(KEY, h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER], 'bodY', NOW).ok).toBe(false);
    expect(verifySignature('other', h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER], 'body', NOW).ok).toBe(false);
    expect(verifySignature(KEY, undefined, h[SIGNATURE_HEADER], 'body', NOW).ok).toBe(false);
    expect(verifySignature(KEY, h[TIMESTAMP_HEADER], '', 'body', NOW).ok).toBe(false);
    expect(verifySignature('', h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER], 'body', NOW).ok).toBe(false);
    expect(verifySignature(KEY, '12.5', sign(KEY, '12.5', 'body'), 'body', 12).ok).toBe(false);
  });

  it('compares case-sensitively: an upper-case hex signature is rejected', () => {
    const h = signRequest(KEY, 'b', NOW);
    expect(verifySignature(KEY, h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER].toUpperCase(), 'b', NOW).ok).toBe(
      false,
    );
  });

  it('allows exactly ±300 s and rejects 301 s either way', () => {
    for (const skew of [300, -300])
      expect(verifySignature(KEY, String(NOW + skew), sign(KEY, String(NOW + skew), 'b'), 'b', NOW).ok).toBe(
        true,
      );
    for (const skew of [301, -301])
      expect(verifySignature(KEY, String(NOW + skew), sign(KEY, String(NOW + skew), 'b'), 'b', NOW).ok).toBe(
        false,
      );
  });

  it('the verifier refuses the same signed request a second time (replay), but accepts a fresh one', () => {
    const v = new RequestVerifier(KEY);
    const h = signRequest(KEY, 'b', NOW);
    expect(v.verify(h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER], 'b', NOW).ok).toBe(true);
    expect(v.verify(h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER], 'b', NOW + 10)).toEqual({
      ok: false,
      reason: 'replayed request',
    });
    const h2 = signRequest(KEY, 'b', NOW + 1);
    expect(v.verify(h2[TIMESTAMP_HEADER], h2[SIGNATURE_HEADER], 'b', NOW + 10).ok).toBe(true);
  });

  it('the replay cache forgets signatures once their timestamp has left the window, and stays bounded', () => {
    const c = new ReplayCache(3);
    expect(c.admit('a', NOW, NOW, 300)).toBe(true);
    expect(c.admit('b', NOW, NOW, 300)).toBe(true);
    expect(c.admit('c', NOW, NOW, 300)).toBe(true);
    expect(c.admit('d', NOW, NOW, 300)).toBe(false); // full: fail closed, never forget early
    expect(c.size).toBe(3);
    expect(c.admit('d', NOW, NOW + 301, 300)).toBe(true); // a, b, c expired
    expect(c.size).toBe(1);
  });
});

describe('#28.4 / #30.9 replays and look-alikes', () => {
  it('holds a whole window of 10,000 nodes heartbeating every 10 s: no fresh request is refused as full', () => {
    // 1,000 signed requests a second, each remembered until its timestamp leaves the window.
    const c = new ReplayCache();
    let refused = 0;
    for (let t = 0; t < LIMITS.defaultTtlSec + LIMITS.futureSkewSec + 30; t++)
      for (let i = 0; i < 1_000; i++)
        if (!c.admit(`${t}/${i}`, NOW + t, NOW + t, LIMITS.defaultTtlSec)) refused++;
    expect(refused).toBe(0);
    expect(c.size).toBeLessThanOrEqual((LIMITS.defaultTtlSec + 1) * 1_000);
  });

  it('refuses a timestamp more than a small skew in the future, so a forward-dated capture cannot outlive a restart', () => {
    const v = new RequestVerifier(KEY, undefined, undefined, NOW);
    const ahead = signRequest(KEY, 'b', NOW + 200);
    expect(v.verify(ahead[TIMESTAMP_HEADER], ahead[SIGNATURE_HEADER], 'b', NOW)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/in the future/),
    });
    const slightly = signRequest(KEY, 'b', NOW + 5); // clock skew between hosts passes
    expect(v.verify(slightly[TIMESTAMP_HEADER], slightly[SIGNATURE_HEADER], 'b', NOW).ok).toBe(true);
  });

  it('two identical writes in one second are two requests: each signed body carries its own nonce', async () => {
    const { withNonce } = await import('./signing.ts');
    const v = new RequestVerifier(KEY);
    for (let i = 0; i < 5; i++) {
      const raw = JSON.stringify(withNonce({ token: 't', action: 'cordon', name: 'a' }));
      const h = signRequest(KEY, raw, NOW);
      expect(v.verify(h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER], raw, NOW)).toEqual({ ok: true });
      // and the very same bytes again are still a replay
      expect(v.verify(h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER], raw, NOW)).toMatchObject({ ok: false });
    }
  });
});

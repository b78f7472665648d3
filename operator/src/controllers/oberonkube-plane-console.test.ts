import { describe, expect, it } from 'vitest';
import { PLANE_CONSOLE_LIMITS as L, type Sent, sendStep, timeToLook } from './oberonkube-plane-console.ts';

const TEXT = 'Kube.Apply web 4 Ticker\n';
const sent = (over: Partial<Sent> = {}): Sent => ({
  vmiUid: 'u1',
  text: TEXT,
  sentAtMs: 1_000,
  checkedAtMs: 1_000,
  failedAtMs: 0,
  lastError: '',
  ...over,
});

describe('the kubevirt plane console: when to look, when to send', () => {
  it('looks at once at a plane it never sent to, then again only every recheck period', () => {
    expect(timeToLook(undefined, TEXT, 0)).toBe(true);
    expect(timeToLook(sent(), TEXT, 1_000 + L.recheckMs - 1)).toBe(false);
    expect(timeToLook(sent(), TEXT, 1_000 + L.recheckMs)).toBe(true);
  });

  it('looks at once when the lines changed, but not while a failed send is waited out', () => {
    expect(timeToLook(sent(), 'Kube.Apply web 6 Ticker\n', 1_001)).toBe(true);
    const failed = sent({ failedAtMs: 5_000, lastError: 'HTTP 500' });
    expect(timeToLook(failed, 'Kube.Apply web 6 Ticker\n', 5_000 + L.retryMs - 1)).toBe(false);
    expect(timeToLook(failed, 'Kube.Apply web 6 Ticker\n', 5_000 + L.retryMs)).toBe(true);
  });

  it('sends to a VMI that has not had these lines from us: a new VMI, or new lines', () => {
    expect(sendStep(undefined, TEXT, 0, 'u1', undefined)).toBe('send');
    expect(sendStep(sent(), TEXT, 2_000, 'u2', undefined)).toBe('send'); // restarted: a new uid
    expect(sendStep(sent(), 'Kube.Apply web 6 Ticker\n', 2_000, 'u1', undefined)).toBe('send');
  });

  it('sends the same lines again only when the plane is heard without them, a while after they went', () => {
    const late = 1_000 + L.resendMs;
    expect(sendStep(sent(), TEXT, late, 'u1', { heard: true, arrived: false })).toBe('resend');
    expect(sendStep(sent(), TEXT, late - 1, 'u1', { heard: true, arrived: false })).toBe('none');
    // arrived (running them, or saying why it cannot): nothing to send
    expect(sendStep(sent(), TEXT, late, 'u1', { heard: true, arrived: true })).toBe('none');
    // a plane not heard at all: the air cannot say the lines were lost
    expect(sendStep(sent(), TEXT, late, 'u1', { heard: false, arrived: false })).toBe('none');
    expect(sendStep(sent(), TEXT, late, 'u1', undefined)).toBe('none');
    // the wait counts from the last send, not from the first
    expect(sendStep(sent({ sentAtMs: late }), TEXT, late + 1, 'u1', { heard: true, arrived: false })).toBe(
      'none',
    );
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IN_CLUSTER_LIMITS, inClusterAuth } from './in-cluster-auth.ts';

describe('inClusterAuth: the pod service account without the kubeconfig library', () => {
  const dirs: string[] = [];
  const account = (token: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-sa-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
    writeFileSync(join(dir, 'token'), `${token}\n`);
    return dir;
  };
  afterEach(() => {
    vi.useRealTimers();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('outside a pod (no API Service in the environment, or no token) there is none', () => {
    expect(inClusterAuth({}, account('t'))).toBeUndefined();
    expect(
      inClusterAuth({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, '/nonexistent'),
    ).toBeUndefined();
  });

  it('the API Service address (IPv6 in brackets), the CA, and the token as a bearer', async () => {
    const dir = account('tok-1');
    const v4 = inClusterAuth({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, dir);
    expect(v4?.getCurrentCluster()).toEqual({ server: 'https://10.96.0.1:443' });
    const v6 = inClusterAuth({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' }, dir);
    expect(v6?.getCurrentCluster()).toEqual({ server: 'https://[fd00::1]:6443' });
    const opts: https.RequestOptions = { headers: { Accept: 'application/json' } };
    await v4?.applyToHTTPSOptions(opts);
    expect(String(opts.ca)).toBe('CA PEM');
    expect(opts.headers).toEqual({ Accept: 'application/json', Authorization: 'Bearer tok-1' });
  });

  it('a rotated token is used within a minute, not read on every request', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const dir = account('old');
    const auth = inClusterAuth({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, dir);
    const bearer = async () => {
      const o: https.RequestOptions = {};
      await auth?.applyToHTTPSOptions(o);
      return (o.headers as Record<string, string>).Authorization;
    };
    expect(await bearer()).toBe('Bearer old');
    writeFileSync(join(dir, 'token'), 'new');
    expect(await bearer()).toBe('Bearer old');
    vi.advanceTimersByTime(IN_CLUSTER_LIMITS.tokenRereadMs);
    expect(await bearer()).toBe('Bearer new');
  });
});

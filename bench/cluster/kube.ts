// What the benchmarks of a real cluster share: kubectl against a kubeconfig, a poll until a
// condition holds, the chart installed, an OberonKube applied.
import { execFileSync } from 'node:child_process';

export interface Kube {
  kubectl(args: string[], input?: string): string;
  // biome-ignore lint/suspicious/noExplicitAny: API objects navigated freely
  getJson(args: string[]): any;
}

/** kubectl of `bin` against the kubeconfig `kubeconfig()` names at each call (a bench may switch clusters). */
export function kube(bin: string, kubeconfig: () => string): Kube {
  const kubectl = (a: string[], input?: string): string =>
    execFileSync(bin, ['--kubeconfig', kubeconfig(), ...a], { encoding: 'utf8', input, maxBuffer: 64 << 20 });
  return { kubectl, getJson: (a) => JSON.parse(kubectl(['get', ...a, '-o', 'json'])) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `ok` every `pollMs` until it holds; the milliseconds it took, or an error naming `what`. */
export async function until(what: string, ok: () => boolean, ms: number, pollMs: number): Promise<number> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(pollMs);
  }
  return Date.now() - t0;
}

/**
 * The chart as release `rk` in `ns` with the product image `imageRef` (imported, never pulled) and
 * the CRDs applied from crds/ (a test run may own them); `extra` are more `--set` values. Waits for
 * the operator's rollout.
 */
export function installOperator(
  k: Kube,
  tools: { helm: string; kubeconfig: string; repo: string },
  ns: string,
  imageRef: string,
  extra: string[] = [],
): void {
  const at = imageRef.lastIndexOf(':');
  k.kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${tools.repo}/crds`]);
  const values = [`image.repository=${imageRef.slice(0, at)}`, `image.tag=${imageRef.slice(at + 1)}`]
    .concat(['image.pullPolicy=Never', 'crds.install=false', ...extra])
    .flatMap((v) => ['--set', v]);
  execFileSync(
    tools.helm,
    ['--kubeconfig', tools.kubeconfig, 'install', 'rk', 'charts/retrokube', '-n', ns, ...values],
    { cwd: tools.repo, stdio: 'inherit' },
  );
  k.kubectl(['rollout', 'status', '-n', ns, 'deployment/rk-retrokube', '--timeout=300s']);
}

/** `kubectl apply` of an OberonKube `name` in `ns` with this spec. */
export function applyOberonKube(k: Kube, ns: string, name: string, spec: Record<string, unknown>): void {
  k.kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonKube',
      metadata: { name, namespace: ns },
      spec,
    }),
  );
}

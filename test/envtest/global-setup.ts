// vitest globalSetup of the `envtest` project: one kine + kube-apiserver for the whole run.
// Provides to tests (read them through test/envtest/harness.ts, not directly):
//   envtestKubeconfig  path of an admin kubeconfig (token auth, trusts the self-signed cert)
//   envtestControl     base URL of a loopback HTTP endpoint that restarts kube-apiserver
//   envtestBins        paths of kube-apiserver, kine, helm, kubectl
import { createServer, type Server } from 'node:http';
import type { TestProject } from 'vitest/node';
import { type ControlPlane, startControlPlane, type TestBins } from './control-plane.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    envtestKubeconfig: string;
    envtestControl: string;
    envtestBins: TestBins;
  }
}

const LIMITS = {
  maxDownMs: 120_000, // a restart request may keep the apiserver down at most this long
} as const;

let plane: ControlPlane | undefined;
let control: Server | undefined;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const t0 = Date.now();
  plane = await startControlPlane();
  console.log(
    `[envtest] kube-apiserver ${plane.server} ready with CRDs in ${Date.now() - t0} ms (${plane.dir})`,
  );
  control = await startControlEndpoint(plane);
  const addr = control.address();
  if (!addr || typeof addr === 'string') throw new Error('envtest: control endpoint has no port');
  project.provide('envtestKubeconfig', plane.kubeconfigPath);
  project.provide('envtestControl', `http://127.0.0.1:${addr.port}`);
  project.provide('envtestBins', plane.bins);
  return async () => {
    await new Promise<void>((ok) => (control ? control.close(() => ok()) : ok()));
    await plane?.stop();
  };
}

/**
 * POST /apiserver/restart?downMs=N  stops kube-apiserver, waits N ms, starts it on the same port
 * with the same datastore; answers {downMs, readyMs} once /readyz is 200 again. One at a time.
 */
function startControlEndpoint(cp: ControlPlane): Promise<Server> {
  let busy = false;
  const srv = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || url.pathname !== '/apiserver/restart') {
      reply(404, { error: 'only POST /apiserver/restart?downMs=N exists' });
      return;
    }
    const downMs = Number(url.searchParams.get('downMs') ?? '0');
    if (!Number.isInteger(downMs) || downMs < 0 || downMs > LIMITS.maxDownMs) {
      reply(400, { error: `downMs must be an integer in 0..${LIMITS.maxDownMs}` });
      return;
    }
    if (busy) {
      reply(409, { error: 'a restart is already in progress' });
      return;
    }
    busy = true;
    cp.restartApiServer(downMs).then(
      (r) => {
        busy = false;
        reply(200, r);
      },
      (err: Error) => {
        busy = false;
        reply(500, { error: err.message });
      },
    );
  });
  return new Promise((ok, fail) => {
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => ok(srv));
  });
}

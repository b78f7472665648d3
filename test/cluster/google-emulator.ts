// Our Google Sheets v4 emulator in a test namespace, as a Deployment and a Service of the product
// image: Google cannot be reached from CI, and a SheetCluster on the Google backend names the
// emulator as its store's rootUrl. The emulator believes any token, so a ready access token in a
// Secret stands in for the service-account key a user would hold.
import { setTimeout as sleep } from 'node:timers/promises';
import { apply, productImage } from './harness.ts';

export const EMULATOR = 'sheets-emulator';
const PORT = 8788;
const CREDENTIALS = 'google-credentials';
/** A test's read over its user's quota (60 a minute, as Google's) is retried until the minute has passed. */
const QUOTA_WAIT_MS = 65_000;
const QUOTA_RETRY_MS = 2_000;

/** Starts the emulator holding one spreadsheet of the given id; returns a SheetCluster `store` naming it. */
export async function startGoogleEmulator(
  ns: string,
  spreadsheetId: string,
): Promise<{ store: Record<string, unknown>; valuesUrl(proxy: string, tab: string): string }> {
  const labels = { 'app.kubernetes.io/name': EMULATOR };
  await apply({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: EMULATOR, namespace: ns, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'emulator',
              image: productImage().ref,
              imagePullPolicy: 'Never',
              args: ['sheets', 'google-emulator', '--host', '0.0.0.0', '--port', String(PORT)].concat([
                '--spreadsheet-id',
                spreadsheetId,
              ]),
              ports: [{ name: 'http', containerPort: PORT }],
              readinessProbe: { tcpSocket: { port: 'http' }, periodSeconds: 2 },
            },
          ],
        },
      },
    },
  });
  await apply({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: EMULATOR, namespace: ns },
    spec: { selector: labels, ports: [{ name: 'http', port: PORT, targetPort: 'http' }] },
  });
  await apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: CREDENTIALS, namespace: ns },
    stringData: {
      'credentials.json': JSON.stringify({ type: 'access_token', access_token: 'cluster-test' }),
    },
  });
  return {
    store: {
      type: 'google',
      google: {
        spreadsheetId,
        credentialsSecretRef: { name: CREDENTIALS },
        rootUrl: `http://${EMULATOR}.${ns}.svc:${PORT}/`,
      },
    },
    // The emulator's Sheets API through the API server's Service proxy (an API key, not a bearer
    // token: the proxy does not pass the caller's Authorization header on).
    valuesUrl: (proxy, tab) =>
      `${proxy}/api/v1/namespaces/${ns}/services/${EMULATOR}:http/proxy/v4/spreadsheets/${spreadsheetId}/values/${tab}?key=cluster-test`,
  };
}

/** A tab's rows (strings, the header first) from `valuesUrl`; a 429 (the test's quota) waited out. */
export async function readTab(url: string): Promise<string[][]> {
  const giveUpAt = Date.now() + QUOTA_WAIT_MS;
  for (;;) {
    const res = await fetch(url);
    if (res.ok) return ((await res.json()) as { values?: string[][] }).values ?? [];
    const body = await res.text();
    if (res.status !== 429 || Date.now() > giveUpAt) throw new Error(`${url}: HTTP ${res.status} ${body}`);
    await sleep(QUOTA_RETRY_MS);
  }
}

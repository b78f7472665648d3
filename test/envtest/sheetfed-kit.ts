// Helpers for the SheetFederation and SheetMigration envtest files: a member cluster as the
// resources name it (its token and signing key in a Secret of its own), the two objects, and a
// migration's phase read from status.
import { SHEETMIGRATION } from '../../operator/src/controllers/sheetmigration.ts';
import type { SheetClusterKit } from '../../operator/src/sheets/bridge/testkit.ts';
import { CORE, type KubeObject, type testClient, waitFor } from './operator-harness.ts';

type Client = ReturnType<typeof testClient>;
// biome-ignore lint/suspicious/noExplicitAny: tests read status fields of unstructured objects.
type Deep = any;

/** Writes Secret `<cluster>-creds` (token, key) and returns the member block that names it. */
export async function memberOf(k: Client, ns: string, c: SheetClusterKit) {
  await k.create(CORE.secret, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${c.name}-creds`, namespace: ns },
    stringData: { token: c.token, key: c.key },
  } as KubeObject);
  return {
    name: c.name,
    url: c.url,
    tokenSecretRef: { name: `${c.name}-creds`, key: 'token' },
    signingKeySecretRef: { name: `${c.name}-creds`, key: 'key' },
  };
}

const ours = (kind: string, ns: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind,
  metadata: { name, namespace: ns },
  spec,
});
export const federation = (ns: string, name: string, spec: Record<string, unknown>): KubeObject =>
  ours('SheetFederation', ns, name, spec);
export const migration = (ns: string, name: string, spec: Record<string, unknown>): KubeObject =>
  ours('SheetMigration', ns, name, spec);

/** A SheetMigration's status now ({} before the first write). */
export async function phaseOf(k: Client, ns: string, name: string): Promise<Deep> {
  return (await k.get<KubeObject & { status?: Deep }>(SHEETMIGRATION, ns, name)).status ?? {};
}

/** Waits until the SheetMigration reaches `phase`; its status then. */
export const untilPhase = (k: Client, ns: string, name: string, phase: string, ms: number): Promise<Deep> =>
  waitFor(
    `${name} ${phase}`,
    async () => {
      const s = await phaseOf(k, ns, name);
      return s.phase === phase && s;
    },
    ms,
  );

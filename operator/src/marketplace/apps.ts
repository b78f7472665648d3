// The Cozystack catalog of retrokube (spec qemu-kubevirt-cozystack §3): which tenant apps exist,
// which of our resources each renders, and the form schema of each — made from the very TypeBox
// schema our CRD is generated from, so a limit lives in one place (no second copy to drift).
import type { TSchema } from '@sinclair/typebox';
import { OberonAirKind } from '../api/oberonair.ts';
import { OberonKubeKind } from '../api/oberonkube.ts';
import { OberonMachineKind } from '../api/oberonmachine.ts';
import type { KindDefinition } from '../api/schema.ts';
import { SheetClusterKind } from '../api/sheetcluster.ts';
import { SheetFederationKind } from '../api/sheetfederation.ts';

export const CATALOG = {
  repository: 'retrokube-apps', // the OCI artifact of the tenant apps
  source: 'retrokube.apps', // its PackageSource
  variant: 'default',
  platformSource: 'retrokube.platform', // the privileged package with the operator
  platformRepository: 'retrokube-platform',
  namespace: 'cozy-system', // where Cozystack keeps sources and artifacts
  category: 'Retrocomputing',
  ociBase: 'oci://ghcr.io/retrokube/marketplace',
} as const;

export interface App {
  /** Component and chart name. */
  name: string;
  /** Our resource the chart renders. */
  def: KindDefinition;
  /**
   * The kind Cozystack serves for the app (apps.cozystack.io). Cozystack's reference catalog has
   * OberonVM/OberonAir/OberonKube already: ours carry an `Rk` prefix, so both coexist.
   */
  appKind: string;
  description: string;
  weight: number;
  tags: string[];
  /** Example values (README, helm lint/template). */
  example: Record<string, unknown>;
  /** Values the schema must refuse, with the field the refusal names. */
  hostile: { values: Record<string, unknown>; field: string }[];
  /** Spec fields kept out of the tenant form: what only a cluster operator may set (#28.10). */
  operatorOnly?: readonly string[];
}

export const APPS: readonly App[] = [
  {
    name: 'oberon-kube',
    def: OberonKubeKind,
    appKind: 'RkOberonKube',
    description: 'A Kube-on-Oberon cluster: a plane and N nodes on their own air, status heard on the air.',
    weight: 30,
    tags: ['oberon', 'risc5', 'kube'],
    example: { nodes: 2, cluster: 'kube', deployments: 'web 4 Ticker; api 2 Ticker2' },
    hostile: [
      { values: { nodes: 99 }, field: 'nodes' },
      { values: { cluster: 'Kube;System.Quit' }, field: 'cluster' },
      { values: { deployments: 'web 4 Ticker; rm -rf /' }, field: 'deployments' },
    ],
  },
  {
    name: 'oberon-air',
    def: OberonAirKind,
    appKind: 'RkOberonAir',
    description: "An air: the UDP relay that carries Wirth's radio frames between Oberon machines.",
    weight: 10,
    tags: ['oberon', 'radio', 'relay'],
    example: { loss: 0.1 },
    hostile: [
      { values: { loss: 2 }, field: 'loss' },
      { values: { port: 70000 }, field: 'port' },
    ],
  },
  {
    name: 'oberon-machine',
    def: OberonMachineKind,
    appKind: 'RkOberonMachine',
    description: 'One emulated RISC5 machine running Oberon: standalone, or a plane or node of a Kube.',
    weight: 20,
    tags: ['oberon', 'risc5', 'machine'],
    example: { role: 'standalone', memory: '128Mi' },
    hostile: [
      { values: { role: 'root' }, field: 'role' },
      { values: { memory: '64Gi;' }, field: 'memory' },
    ],
  },
  {
    name: 'sheet-cluster',
    def: SheetClusterKind,
    appKind: 'RkSheetCluster',
    description: 'A Sheeternetes cluster: a spreadsheet control plane, its apiserver and node agents.',
    weight: 40,
    tags: ['sheeternetes', 'spreadsheet'],
    example: { nodes: 1 },
    hostile: [{ values: { nodes: 1000 }, field: 'nodes' }],
    // a host path mounted into the agent pods: never a tenant's choice
    operatorOnly: ['dockerSocket'],
  },
  {
    name: 'sheet-federation',
    def: SheetFederationKind,
    appKind: 'RkSheetFederation',
    description: 'A federation of spreadsheet clusters: sync and stretch between SheetClusters.',
    weight: 50,
    tags: ['sheeternetes', 'federation'],
    example: {
      members: [
        {
          name: 'home',
          url: 'http://sheets-home:8787',
          tokenSecretRef: { name: 'home-token', key: 'token' },
        },
        { name: 'lab', url: 'http://sheets-lab:8787', tokenSecretRef: { name: 'lab-token', key: 'token' } },
      ],
    },
    hostile: [
      {
        values: {
          members: [{ name: 'only', url: 'http://x:1', tokenSecretRef: { name: 't', key: 'token' } }],
        },
        field: 'members',
      },
    ],
  },
];

type Json = Record<string, unknown>;

/**
 * A CRD spec schema as a Cozystack form schema: the same fields, types, bounds, defaults and
 * descriptions; CEL rules dropped (Helm's validator does not run them; the API server still does),
 * except that a field checked by `self.matches('<re>')` alone (a CEL rule so that the API server's
 * refusal says the rule's words, not the expression) gets `<re>` back as its `pattern`;
 * nested objects closed; the root left open, because cozystack-engine adds `_cluster` and
 * `_namespace` to every app's values and a closed root makes Helm refuse them.
 */
export function formSchema(spec: TSchema, omit: readonly string[] = []): Json {
  const plain = JSON.parse(JSON.stringify(spec)) as Json; // drops TypeBox's symbol keys
  const walk = (s: Json, root: boolean): Json => {
    const out: Json = {};
    for (const [k, v] of Object.entries(s)) {
      if (k.startsWith('x-kubernetes-')) continue;
      out[k] = v;
    }
    const rules = s['x-kubernetes-validations'];
    const only = Array.isArray(rules) && rules.length === 1 ? (rules[0] as Json).rule : undefined;
    const re = typeof only === 'string' ? /^self\.matches\('([^']*)'\)$/.exec(only) : null;
    if (re && out.pattern === undefined) out.pattern = re[1];
    if (out.properties && typeof out.properties === 'object') {
      const props: Json = {};
      for (const [k, v] of Object.entries(out.properties as Json)) props[k] = walk(v as Json, false);
      out.properties = props;
    }
    if (out.type === 'object' && out.properties && !root && out.additionalProperties === undefined)
      out.additionalProperties = false;
    if (root) {
      delete out.additionalProperties;
      for (const k of omit) delete (out.properties as Json | undefined)?.[k];
      return {
        $schema: 'http://json-schema.org/draft-07/schema#',
        title: String(out.description ?? ''),
        ...out,
      };
    }
    return out;
  };
  return walk(plain, true);
}

/** Fields of the form in order: the schema's property order (the same order as the CRD's). */
export function fieldOrder(schema: Json): string[] {
  return Object.keys((schema.properties as Json | undefined) ?? {});
}

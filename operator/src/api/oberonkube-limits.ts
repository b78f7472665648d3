// OberonKube's limits, defaults and the grammar of its deployments.
// Apart from the TypeBox schema in oberonkube.ts (which re-exports them): the operator's controllers
// import these, and TypeBox (218 modules, 10-20 MiB of RSS) is for the CRD generator and the CLI,
// not for a reconcile (#32; operator/src/cli/startup.test.ts keeps it so).

export const KUBE_LIMITS = {
  minNodes: 1, // a cluster needs a node to run anything
  maxNodes: 20, // issue 7's ceiling; each machine keeps a host core busy
  deploymentsChars: 200, // what can still fit Boot's 240 once `Kube.Ensure ` is added per item
  nameChars: 30, // children are rk-kube-<name>... and machines <name>-node-a: fits a 63-character label
  // What the plane accepts (Kube.Mod): more is refused on its screen only, so the schema says it first.
  maxReplicas: 250, // MaxReplicas: every pod needs one of 255 radio ids
  deploymentNameChars: 15, // DeployLen: "<name>-rs<rev>-<seq>" must fit Kube's 39-character names
  podsPerNode: 10, // KubeNet.Serve's capacity: an assignment frame carries at most 10 pod ids
  storeObjects: 256, // MaxObj: deployments, replicasets, pods and nodes together
} as const;

export const KUBE_DEFAULTS = { nodes: 2, cluster: 'kube', runtime: 'pod', memory: '128Mi', loss: 0 } as const;

/** Replicas 0..250 (KUBE_LIMITS.maxReplicas), as a pattern: the plane refuses more. */
const REPLICAS_ITEM = '([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|250)';
/** One deployment item as the plane's `Kube.Ensure` takes it (spec §7.11). */
export const DEPLOYMENT_ITEM = `[a-z][a-z0-9]{0,14} ${REPLICAS_ITEM} [A-Za-z][A-Za-z0-9]{0,14}`;
/** What a deployment item must look like, in words (the API server's error shows this, not the pattern). */
export const DEPLOYMENT_WORDS =
  'each deployment is "name replicas Module", separated by ";" — name: a lowercase letter then up to 14 lowercase letters or digits; replicas: 0 to 250; Module: a letter then up to 14 letters or digits (an Oberon module with a Start command). Example: "web 4 Ticker; api 2 Ticker2"';
/** `name replicas Module; ...`: items separated by `;`, spaces around them allowed. */
export const DEPLOYMENTS_PATTERN = `^ *(${DEPLOYMENT_ITEM}( *; *${DEPLOYMENT_ITEM})* *;? *)?$`;

// OberonMachine's limits, defaults and patterns.
// Apart from the TypeBox schema in oberonmachine.ts (which re-exports them): the operator's controllers
// import these, and TypeBox (218 modules, 10-20 MiB of RSS) is for the CRD generator and the CLI,
// not for a reconcile (#32; operator/src/cli/startup.test.ts keeps it so).

export const MACHINE_LIMITS = {
  nodeNameChars: 6, // heartbeat layout: 1 tag + 6 name + 1 count + 10 ids + 2 counter + 4 MAC
  clusterChars: 8, // KubeNet's cluster parameter buffer holds 8 characters
  keyHexDigits: 16, // HalfSipHash key: 64 bits
  bootChars: 240, // Boot's documented limit on the serial command text (catalog, hook)
  nameChars: 40, // children are rk-m-<name>(-disk, -fill-<hash>): fits a 63-character label
} as const;

export const MACHINE_DEFAULTS = {
  role: 'standalone',
  cluster: 'kube',
  runtime: 'pod',
  memory: '128Mi', // the catalog default; the guest sees 16 MB, the rest is launcher overhead
  diskSize: '1Gi', // an 8 MiB disk plus room; storage classes round up anyway
  running: true,
} as const;

export const NODE_NAME_PATTERN = '^[a-z0-9-]{1,6}$';
export const CLUSTER_PATTERN = '^[a-z0-9-]{1,8}$';
export const KEY_PATTERN = '^[0-9a-fA-F]{0,16}$';

// SheetCluster's limits, defaults and runtimes.
// Apart from the TypeBox schema in sheetcluster.ts (which re-exports them): the operator's controllers
// import these, and TypeBox (218 modules, 10-20 MiB of RSS) is for the CRD generator and the CLI,
// not for a reconcile (#32; operator/src/cli/startup.test.ts keeps it so).

export const SHEET_LIMITS = {
  maxNodes: 50, // issue 12: 0–50 node agents; one heartbeat each per interval into one workbook
  nameChars: 30, // children are rk-sheets-<name>-node (a StatefulSet: ≤ 52 for its revision label)
  maxDeployments: 50, // the spec is a seed, not a database; the sheet holds as many as people add
  maxReplicas: 1000, // per spec deployment; the contract allows 10,000, more here is a typo
  maxRequest: 1_000_000, // millicores / MiB one pod of a spec deployment may request
  minFailoverSeconds: 5, // a node silent this long is NotReady; below 5 s a GC pause evicts pods
  maxFailoverSeconds: 3600,
  maxNodeCpu: 1_000_000, // advertised millicores per node agent
  maxNodeMemory: 4_194_304, // advertised MiB per node agent (4 TiB)
  maxWorkbookSize: '100Gi', // an xlsx workbook past this is not a spreadsheet any more
  minWorkbookSize: '16Mi',
  textChars: 4096, // one free-text cell of a spec deployment (command, an env item, ...)
  listItems: 64, // items in one list field of a spec deployment (env, ports, ...)
} as const;

export const SHEET_DEFAULTS = {
  nodes: 3,
  port: 8787, // the reference apiserver's port; agents reach it through the Service on this port
  failoverSeconds: 30, // the reference NODE_TTL
  heartbeatSeconds: 10, // the reference kubelet interval
  samples: true, // a brand-new workbook gets the sample deployments, as `retrokube sheets serve` does
  runtimes: ['wasm'] as const, // the only runtime that needs no opt-in: sandboxed WebAssembly
  workbookSize: '1Gi',
  apiserverResources: {
    requests: { cpu: '50m', memory: '128Mi' },
    limits: { cpu: '1', memory: '512Mi' },
  },
  nodeResources: {
    requests: { cpu: '100m', memory: '128Mi' },
    limits: { cpu: '1', memory: '512Mi' },
  },
} as const;

export const RUNTIMES = ['wasm', 'process', 'docker'] as const;
export type SheetRuntime = (typeof RUNTIMES)[number];

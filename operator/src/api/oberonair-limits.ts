// OberonAir's defaults and name limit.
// Apart from the TypeBox schema in oberonair.ts (which re-exports them): the operator's controllers
// import these, and TypeBox (218 modules, 10-20 MiB of RSS) is for the CRD generator and the CLI,
// not for a reconcile (#32; operator/src/cli/startup.test.ts keeps it so).

export const AIR_DEFAULTS = {
  port: 7524, // the upstream relay's port: machines of the catalog find an air there
  loss: 0, // a perfect air unless asked otherwise
  resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
} as const;

/** Child objects are named `rk-air-<name>`; a Service name is a DNS-1035 label of at most 63 characters. */
export const AIR_NAME_MAX = 63 - 'rk-air-'.length;

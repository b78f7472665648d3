// SheetFederation's defaults.
// Apart from the TypeBox schema in sheetfederation.ts (which re-exports them): the operator's controllers
// import these, and TypeBox (218 modules, 10-20 MiB of RSS) is for the CRD generator and the CLI,
// not for a reconcile (#32; operator/src/cli/startup.test.ts keeps it so).

export const FEDERATION_DEFAULTS = { syncIntervalSeconds: 60, observeSeconds: 15 } as const;

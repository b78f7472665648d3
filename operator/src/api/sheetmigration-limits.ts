// SheetMigration's defaults and phases.
// Apart from the TypeBox schema in sheetmigration.ts (which re-exports them): the operator's controllers
// import these, and TypeBox (218 modules, 10-20 MiB of RSS) is for the CRD generator and the CLI,
// not for a reconcile (#32; operator/src/cli/startup.test.ts keeps it so).

export const MIGRATION_DEFAULTS = { waitSeconds: 120, pollSeconds: 3, rollbackWindowSeconds: 0 } as const;

export const MIGRATION_PHASES = [
  'Pending',
  'ScalingTarget',
  'WaitingTarget',
  'DrainingSource',
  'Watching',
  'Succeeded',
  'RollingBack',
  'RolledBack',
  'Failed',
] as const;

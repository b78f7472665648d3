// Every kind retrokube serves. A new kind is one schema file in this folder plus one line here.
import { OberonAirKind } from './oberonair.ts';
import { OberonKubeKind } from './oberonkube.ts';
import { OberonMachineKind } from './oberonmachine.ts';
import { RolloutKind } from './rollout.ts';
import type { KindDefinition } from './schema.ts';
import { SheetClusterKind } from './sheetcluster.ts';
import { SheetFederationKind } from './sheetfederation.ts';
import { SheetMigrationKind } from './sheetmigration.ts';

export const KINDS: readonly KindDefinition[] = [
  OberonAirKind,
  OberonMachineKind,
  OberonKubeKind,
  SheetClusterKind,
  SheetFederationKind,
  SheetMigrationKind,
  RolloutKind,
];

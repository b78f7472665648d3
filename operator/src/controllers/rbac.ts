// The PolicyRules of every controller plus the runtime's; the chart's ClusterRole is generated from this.
import { mergeRules, type PolicyRule, RUNTIME_RBAC } from '../runtime/rbac.ts';
import { OBERONAIR_RBAC } from './oberonair.ts';
import { OBERONKUBE_RBAC } from './oberonkube.ts';
import { OBERONMACHINE_RBAC } from './oberonmachine.ts';
import { ROLLOUT_RBAC } from './rollout.ts';
import { SHEETCLUSTER_RBAC } from './sheetcluster.ts';
import { SHEETFEDERATION_RBAC } from './sheetfederation.ts';
import { SHEETMIGRATION_RBAC } from './sheetmigration.ts';

export function operatorRules(): PolicyRule[] {
  return mergeRules([
    ...RUNTIME_RBAC,
    ...OBERONAIR_RBAC,
    ...OBERONMACHINE_RBAC,
    ...OBERONKUBE_RBAC,
    ...SHEETCLUSTER_RBAC,
    ...SHEETFEDERATION_RBAC,
    ...SHEETMIGRATION_RBAC,
    ...ROLLOUT_RBAC,
  ]);
}

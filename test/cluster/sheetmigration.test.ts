// test/cluster/cases/sheetmigration.ts on the single node, for a quick run or where the several nodes are off
// (RETROKUBE_MULTINODE=0 or another cluster in RETROKUBE_CLUSTER_KUBECONFIG). npm test runs the same
// cases on the several nodes (test/cluster/nodes.test.ts), so the cluster project leaves this
// file out while those run (vitest.config.ts, SEVERAL_NODES_CARRY).
import { describe } from 'vitest';
import { sheetMigrationGroup } from './cases/sheetmigration.ts';
import { skipReason } from './harness.ts';

describe.skipIf(skipReason())('on the single node', sheetMigrationGroup);

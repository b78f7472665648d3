// One SheetCluster of a fleet run by `retrokube up`, as a rollout target: its apiserver and agents
// run as local processes (sheets.ts), it is judged from what its sheet says (the Rollout
// controller's pure half, rollout/sheet-target.ts: every pod Running on the deployment's current
// spec) and changed through the apiserver's own signed `apply` contract — the same reads and writes
// the controller makes, with the token and signing key `up` derived for it.
import type { Change, Observation, Version } from '../rollout/plan.ts';
import { applyRefusal, applyRequest, observeSheet, specOwnership } from '../rollout/sheet-target.ts';
import type { FleetTarget } from './rollout-runner.ts';
import type { RunningSheets } from './sheets.ts';

export class FleetSheet implements FleetTarget {
  readonly kind = 'SheetCluster' as const;
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly sheets: RunningSheets;

  constructor(name: string, labels: Record<string, string>, sheets: RunningSheets) {
    this.name = name;
    this.labels = { ...labels };
    this.sheets = sheets;
  }

  async observe(change: Change, minRunning: number): Promise<Observation> {
    const [deployments, pods] = await Promise.all([
      this.sheets.client.get('deployments'),
      this.sheets.client.get('pods'),
    ]);
    // The SheetCluster's spec.deployments owns the fields it sets (`up` puts them back): such a
    // target cannot be rolled, and says how to fix it.
    const owned = specOwnership(this.name, this.sheets.settings.deployments, change);
    return observeSheet({ deployments, pods }, change.deployment, minRunning, owned);
  }

  async apply(deployment: string, version: Version): Promise<void> {
    const refused = applyRefusal(await this.sheets.client.post(applyRequest(deployment, version)));
    if (refused) throw new Error(refused);
  }

  close(): Promise<void> {
    return this.sheets.stop();
  }
}

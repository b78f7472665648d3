import type { Command } from 'commander';
import { registerLabVerb } from '../console/lab.ts';
import { readUpState, stateDir } from '../local/state.ts';
import { registerSheetsBridgeVerbs } from '../sheets/bridge/cli.ts';
import { registerSheetsControlPlaneVerbs } from '../sheets/ctl/verbs.ts';
import { registerSheetsNodeVerbs } from '../sheets/node/cli.ts';
import { registerWasmletVerb } from '../sheets/wasmlet/cli.ts';
import { registerSheetsWireVerbs } from '../sheets/wire/cli.ts';
import { registerAirVerbs } from './air.ts';
import { registerDiskVerbs, registerKubeDiskVerbs } from './disk.ts';
import { registerLauncherVerbs } from './launcher.ts';
import { registerMachineVerbs } from './machine.ts';
import { registerOperatorVerbs } from './operator.ts';
import { registerRolloutVerbs } from './rollout.ts';
import { registerSheetsUpVerb } from './sheets-up.ts';
import { registerUpVerbs } from './up.ts';

// Each area of the project adds its verbs here, one line each, so main.ts stays small.
export function registerVerbs(program: Command): void {
  registerAirVerbs(program);
  registerDiskVerbs(program);
  registerKubeDiskVerbs(program);
  registerLabVerb(program);
  registerLauncherVerbs(program);
  registerMachineVerbs(program);
  registerOperatorVerbs(program);
  registerRolloutVerbs(program);
  // skctl beside a running `up`: its apiserver, from the state folder (as `air listen` finds its air)
  registerSheetsControlPlaneVerbs(program, () => {
    const st = readUpState(stateDir());
    return st?.sheets?.url ?? st?.fleet?.clusters.find((c) => c.url)?.url;
  });
  registerSheetsUpVerb(program);
  registerSheetsNodeVerbs(program);
  registerSheetsBridgeVerbs(program);
  registerSheetsWireVerbs(program);
  registerWasmletVerb(program);
  registerUpVerbs(program);
}

// `retrokube rollout status|promote|abort|pause|resume NAME`: a person's handle on a Rollout in
// Kubernetes, or on one a local `retrokube up` walks (found through its state folder, as `kube get`
// finds it). The walk itself is the operator's (or `up`'s); these verbs only read its status or set
// the fields the planner obeys (spec.promote, spec.abort, spec.paused).
import type { Command } from 'commander';
import { formatRollout, type RolloutLike } from '../rollout/format.ts';
import { settled } from '../rollout/plan.ts';

export const LIMITS = {
  watchMs: 1_000, // how often --watch redraws
} as const;

interface Common {
  namespace?: string;
  kubeconfig?: string;
  state?: string;
  local?: boolean;
}

/** Where the rollout lives: a running local `up` or Kubernetes. Pure. */
export function rolloutHome(o: Common, localUpRunsFleet: boolean): 'local' | 'kubernetes' {
  if (o.local || o.state !== undefined) return 'local';
  if (o.kubeconfig !== undefined || o.namespace !== undefined) return 'kubernetes';
  return localUpRunsFleet ? 'local' : 'kubernetes';
}

/** Reads and steers one rollout, wherever it lives. */
interface Handle {
  where: string;
  get(): Promise<RolloutLike>;
  set(fields: Record<string, boolean>): Promise<void>;
}

async function handle(name: string, o: Common): Promise<Handle> {
  const { readUpState, requireUp, stateDir, upRequest } = await import('../local/state.ts');
  const dir = stateDir(o.state);
  if (rolloutHome(o, readUpState(dir)?.fleet !== undefined) === 'local') {
    const st = requireUp(dir);
    const path = `/rollouts/${encodeURIComponent(name)}`;
    return {
      where: `the local "retrokube up" in ${dir}`,
      get: async () => (await (await upRequest(st, 'GET', path)).json()) as RolloutLike,
      set: async (fields) => void (await upRequest(st, 'POST', path, fields)),
    };
  }
  const { KubeClient } = await import('../runtime/client.ts');
  const { ROLLOUT } = await import('../controllers/rollout.ts');
  const ns = o.namespace ?? 'default';
  // Not a local fleet here: say so beside Kubernetes' own answer, which alone (e.g. "HTTP protocol
  // is not allowed when skipTLSVerify is not set") does not tell a person they meant a local `up`.
  const hint = (e: unknown): Error =>
    new Error(
      `rollout ${name} in Kubernetes (namespace ${ns}): ${(e as Error).message}. No local "retrokube up" running a fleet was found in ${dir}; for one elsewhere pass --state DIR of that up`,
    );
  let k: InstanceType<typeof KubeClient>;
  try {
    k = KubeClient.fromDefault(o.kubeconfig);
  } catch (e) {
    throw hint(e);
  }
  return {
    where: `namespace ${ns}`,
    get: async () =>
      (await k.get(ROLLOUT, ns, name).catch((e: unknown) => Promise.reject(hint(e)))) as RolloutLike,
    set: async (spec) =>
      void (await k.mergePatch(ROLLOUT, ns, name, { spec }).catch((e: unknown) => Promise.reject(hint(e)))),
  };
}

async function setField(name: string, o: Common, spec: Record<string, boolean>, said: string): Promise<void> {
  const h = await handle(name, o);
  await h.set(spec);
  process.stdout.write(`rollout ${name} (${h.where}): ${said}\n`);
}

export function registerRolloutVerbs(program: Command): void {
  const rollout = program
    .command('rollout')
    .description(
      'follow and steer a Rollout (rollouts.retrokube.io) in Kubernetes, or one a local "retrokube up" runs from a fleet FILE',
    );
  const common = (c: Command) =>
    c
      .argument('<name>', 'the Rollout')
      .option('-n, --namespace <ns>', 'its namespace (default: default)')
      .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)')
      .option('--local', 'the rollout of the running "retrokube up" (the default when one runs a fleet FILE)')
      .option(
        '--state <dir>',
        'state folder of that "retrokube up" (implies --local; default $RETROKUBE_STATE, $XDG_STATE_HOME/retrokube or ./.retrokube)',
      );

  common(rollout.command('status'))
    .description('the walk: one row per target with its phase and attempts, a progress bar')
    .option('-w, --watch', 'redraw until the rollout ends')
    .option('-o, --output <format>', 'json for machines')
    .addHelpText(
      'after',
      '\nExamples:\n  retrokube rollout status ticker2 -n fleet --watch\n  retrokube rollout status ticker2 --local   # a fleet run by "retrokube up FILE"\n',
    )
    .action(async (name: string, o: Common & { watch?: boolean; output?: string }) => {
      if (o.output !== undefined && o.output !== 'json') throw new Error(`-o takes json, got "${o.output}"`);
      const h = await handle(name, o);
      for (;;) {
        const r = await h.get();
        if (o.output === 'json') process.stdout.write(`${JSON.stringify(r.status ?? {}, null, 2)}\n`);
        else
          process.stdout.write(
            `${o.watch && process.stdout.isTTY ? '\x1b[H\x1b[2J' : ''}${formatRollout(r, Date.now())}\n`,
          );
        if (!o.watch || settled(r.status)) return;
        await new Promise((res) => setTimeout(res, LIMITS.watchMs));
      }
    });
  common(rollout.command('promote'))
    .description('let a manual canary go on to the rest of the targets')
    .action((name: string, o: Common) => setField(name, o, { promote: true }, 'promoted'));
  common(rollout.command('abort'))
    .description('roll back every target caught mid-change (and unpromoted canaries) and stop')
    .action((name: string, o: Common) => setField(name, o, { abort: true }, 'abort requested'));
  common(rollout.command('pause'))
    .description('start no new target (those changing finish)')
    .action((name: string, o: Common) => setField(name, o, { paused: true }, 'paused'));
  common(rollout.command('resume'))
    .description('go on after a pause')
    .action((name: string, o: Common) => setField(name, o, { paused: false }, 'resumed'));
}

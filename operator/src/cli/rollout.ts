// `retrokube rollout status|promote|abort|pause|resume NAME`: a person's handle on a Rollout in
// Kubernetes. The walk itself is the operator's; these verbs only read its status or set the
// fields the planner obeys (spec.promote, spec.abort, spec.paused).
import type { Command } from 'commander';
import type { RolloutStatusT } from '../api/rollout.ts';

export const LIMITS = {
  watchMs: 1_000, // how often --watch redraws
  barWidth: 20, // characters of the progress bar
  messageChars: 60, // a target's message in the table
} as const;

interface RolloutLike {
  metadata: { name?: string; namespace?: string };
  spec?: {
    strategy?: { type?: string };
    change?: { deployment?: string; image?: string; replicas?: number };
  };
  status?: RolloutStatusT;
}

const FINAL = new Set(['Succeeded', 'Failed', 'Aborted']);

/** The seed's report as a table: one row per target, a bar for the whole walk. Pure. */
export function formatRollout(r: RolloutLike, nowMs: number): string {
  const st = r.status ?? {};
  const rows = st.targets ?? [];
  const done = rows.filter((t) => t.phase === 'Succeeded').length;
  const ended = rows.filter((t) => ['Succeeded', 'Failed', 'RolledBack', 'Skipped'].includes(t.phase)).length;
  const filled = rows.length ? Math.round((LIMITS.barWidth * ended) / rows.length) : 0;
  const c = r.spec?.change ?? {};
  const change = [c.image, c.replicas !== undefined ? `×${c.replicas}` : undefined].filter(Boolean).join(' ');
  const head = [
    `rollout ${r.metadata.namespace}/${r.metadata.name}: ${r.spec?.strategy?.type ?? '?'} change of ${c.deployment ?? '?'} to ${change}`,
    `[${'#'.repeat(filled)}${'-'.repeat(LIMITS.barWidth - filled)}] ${done}/${rows.length} changed  ${st.phase ?? 'Pending'}${st.message ? ` — ${st.message}` : ''}`,
  ];
  const table = [['TARGET', 'PHASE', 'ATTEMPTS', 'SINCE', 'MESSAGE']];
  for (const t of rows) {
    const since = t.finishedAt ?? t.startedAt;
    table.push([
      t.name,
      t.phase,
      String(t.attempts),
      since ? age(nowMs - Date.parse(since)) : '-',
      (t.message ?? '').slice(0, LIMITS.messageChars),
    ]);
  }
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  const lines = table.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd(),
  );
  return [...head, '', ...lines].join('\n');
}

/** "3s ago", "4m ago", "2h ago". */
export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}

interface Common {
  namespace: string;
  kubeconfig?: string;
}

async function client(o: Common) {
  const { KubeClient } = await import('../runtime/client.ts');
  const { ROLLOUT } = await import('../controllers/rollout.ts');
  return { k: KubeClient.fromDefault(o.kubeconfig), ROLLOUT };
}

async function setField(name: string, o: Common, spec: Record<string, boolean>, said: string): Promise<void> {
  const { k, ROLLOUT } = await client(o);
  await k.mergePatch(ROLLOUT, o.namespace, name, { spec });
  process.stdout.write(`rollout ${o.namespace}/${name}: ${said}\n`);
}

export function registerRolloutVerbs(program: Command): void {
  const rollout = program
    .command('rollout')
    .description('follow and steer a Rollout (rollouts.retrokube.io) in Kubernetes');
  const common = (c: Command) =>
    c
      .argument('<name>', 'the Rollout')
      .option('-n, --namespace <ns>', 'its namespace', 'default')
      .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)');

  common(rollout.command('status'))
    .description('the walk: one row per target with its phase and attempts, a progress bar')
    .option('-w, --watch', 'redraw until the rollout ends')
    .option('-o, --output <format>', 'json for machines')
    .addHelpText('after', '\nExample:\n  retrokube rollout status ticker2 -n fleet --watch\n')
    .action(async (name: string, o: Common & { watch?: boolean; output?: string }) => {
      if (o.output !== undefined && o.output !== 'json') throw new Error(`-o takes json, got "${o.output}"`);
      const { k, ROLLOUT } = await client(o);
      for (;;) {
        const r = (await k.get(ROLLOUT, o.namespace, name)) as RolloutLike;
        if (o.output === 'json') process.stdout.write(`${JSON.stringify(r.status ?? {}, null, 2)}\n`);
        else
          process.stdout.write(
            `${o.watch && process.stdout.isTTY ? '\x1b[H\x1b[2J' : ''}${formatRollout(r, Date.now())}\n`,
          );
        if (!o.watch || FINAL.has(r.status?.phase ?? '')) return;
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

// `retrokube sheets bridge status|sync|stretch|migrate` — the reference bridge.py's verbs, flags
// and messages (spec §7), plus -o json, progress while waiting, and a non-zero exit on failure
// (the reference always exits 0).

import { type Command, Option } from 'commander';
import { readSecretFile } from '../../util/secret-option.ts';
import { sheetsGroup } from '../ctl/verbs.ts';
import { DEFAULT_TOKEN } from '../default-token.ts';
import { BridgeError, Member } from './client.ts';
import { type MigrationSpec, migrationResult } from './migrate.ts';
import { describeStretch } from './plan.ts';
import { federationStatus, migrate, stretch, syncOnce } from './run.ts';

interface EndpointFlags {
  local: string;
  peer: string;
  localToken: string;
  peerToken: string;
  localSigningKey?: string;
  peerSigningKey?: string;
  localTokenFile?: string;
  peerTokenFile?: string;
  localSigningKeyFile?: string;
  peerSigningKeyFile?: string;
  output: string;
}

/** The secret flags of the bridge, each with its `-file` twin and its environment variable (#28.5). */
const SECRET_FLAGS = [
  ['--local-token', 'localToken', 'LOCAL_TOKEN'],
  ['--peer-token', 'peerToken', 'PEER_TOKEN'],
  ['--local-signing-key', 'localSigningKey', 'LOCAL_SIGNING_KEY'],
  ['--peer-signing-key', 'peerSigningKey', 'PEER_SIGNING_KEY'],
] as const;

/**
 * Secrets from `--x-file` (first line) win; a secret given on the command line is warned about
 * (every user of the host reads argv in ps). The environment needs nothing: it is the default.
 */
export function bridgeSecrets(
  o: EndpointFlags,
  argv: readonly string[] = process.argv,
  warn: (line: string) => void = (l) => process.stderr.write(l),
): EndpointFlags {
  const out = { ...o };
  for (const [flag, field, env] of SECRET_FLAGS) {
    const file = o[`${field}File`];
    const onArgv = argv.some((a) => a === flag || a.startsWith(`${flag}=`));
    if (file !== undefined) {
      if (onArgv) throw new Error(`give ${flag} or ${flag}-file, not both`);
      out[field] = readSecretFile(file, flag.slice(2).replaceAll('-', ' '));
    } else if (onArgv)
      warn(
        `warning: ${flag} on the command line is visible to every user of this host (ps); use ${env}=… or ${flag}-file FILE\n`,
      );
  }
  return out;
}

function wholeNumber(flag: string, min = 0, max = 86_400) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new Error(`${flag} "${v}" must be a whole number`);
    const n = Number(v);
    if (n < min || n > max) throw new Error(`${flag} ${n} must be between ${min} and ${max}`);
    return n;
  };
}

function url(flag: string) {
  return (v: string): string => {
    if (!/^https?:\/\//.test(v))
      throw new Error(`${flag} ${JSON.stringify(v)} must start with http:// or https://`);
    return v;
  };
}

/** The common flags of every verb. Tokens and keys may come from the environment (kept out of `ps`). */
function endpoints(cmd: Command): Command {
  return cmd
    .requiredOption('--local <url>', 'the local apiserver', url('--local'))
    .requiredOption('--peer <url>', 'the peer apiserver', url('--peer'))
    .addOption(
      new Option(
        '--local-token <t>',
        'local token (env LOCAL_TOKEN, or --local-token-file; argv is visible in ps)',
      ).default(process.env.LOCAL_TOKEN ?? DEFAULT_TOKEN, 'CHANGE_ME_super_secret'),
    )
    .addOption(
      new Option(
        '--peer-token <t>',
        'peer token (env PEER_TOKEN, or --peer-token-file; argv is visible in ps)',
      ).default(process.env.PEER_TOKEN ?? DEFAULT_TOKEN, 'CHANGE_ME_super_secret'),
    )
    .addOption(
      new Option(
        '--local-signing-key <k>',
        'HMAC key of the local apiserver (env LOCAL_SIGNING_KEY)',
      ).default(process.env.LOCAL_SIGNING_KEY || undefined, 'none'),
    )
    .addOption(
      new Option('--peer-signing-key <k>', 'HMAC key of the peer apiserver (env PEER_SIGNING_KEY)').default(
        process.env.PEER_SIGNING_KEY || undefined,
        'none',
      ),
    )
    .option('--local-token-file <file>', 'read the local token from the first line of FILE')
    .option('--peer-token-file <file>', 'read the peer token from the first line of FILE')
    .option('--local-signing-key-file <file>', 'read the local HMAC key from the first line of FILE')
    .option('--peer-signing-key-file <file>', 'read the peer HMAC key from the first line of FILE')
    .addOption(
      new Option('-o, --output <fmt>', 'text (the reference lines) or json')
        .choices(['text', 'json'])
        .default('text'),
    );
}

function membersOf(given: EndpointFlags): { local: Member; peer: Member } {
  const o = bridgeSecrets(given);
  return {
    local: new Member({ name: 'local', url: o.local, token: o.localToken, key: o.localSigningKey }),
    peer: new Member({ name: 'peer', url: o.peer, token: o.peerToken, key: o.peerSigningKey }),
  };
}

/** Python's json.dumps (", " and ": " separators, non-ASCII escaped), so result lines read as the reference's. */
export function pyJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string')
    return JSON.stringify(v).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  if (typeof v === 'number' || typeof v === 'boolean') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  return `{${Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== undefined)
    .map(([k, x]) => `${pyJson(k)}: ${pyJson(x)}`)
    .join(', ')}}`;
}

const say = (s: string) => process.stdout.write(`${s}\n`);

/** Runs a verb; a BridgeError prints the reference's `[bridge] …` line and exits 1. */
async function guarded(json: boolean, fn: () => Promise<boolean>): Promise<void> {
  try {
    if (!(await fn())) process.exitCode = 1;
  } catch (e) {
    if (!(e instanceof BridgeError)) throw e;
    if (json) say(JSON.stringify({ ok: false, error: e.message, member: e.member || undefined }));
    else say(`[bridge] ${e.message}`);
    process.exitCode = 1;
  }
}

export function registerSheetsBridgeVerbs(program: Command): void {
  const bridge = sheetsGroup(program)
    .command('bridge')
    .description(
      'federate two Sheeternetes clusters: status, sync, stretch, live migrate (the reference bridge.py)',
    );

  endpoints(bridge.command('status').description('federated service view'))
    .option('--push', 'publish every local deployment to the peer (overwrites same-named ones there)')
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets bridge status --local http://127.0.0.1:8801 --peer http://127.0.0.1:8802\n',
    )
    .action(async (o: EndpointFlags & { push?: boolean }) => {
      const json = o.output === 'json';
      await guarded(json, async () => {
        const { local, peer } = membersOf(o);
        const st = await federationStatus([local, peer]);
        const localRows = st.views[0].deployments;
        const [l, p] = st.members;
        if (!json) {
          // the reference's lines first, in its order (the view is the one read before any push)
          say(`[bridge] local: ${l.deployments} deployments · peer: ${p.deployments} deployments`);
          say('[bridge] federated services:');
          for (const s of st.services) say(`  ${s.name.padEnd(20)} -> ${s.home}`);
        }
        let pushed: string[] | undefined;
        if (o.push && localRows.length) {
          if (!json) say('[bridge] publishing local deployments to peer…');
          pushed = await peer.apply(localRows);
          if (!json) say(`   ${JSON.stringify({ applied: pushed })}`); // the raw reply, as the reference prints it
        }
        if (json) {
          say(JSON.stringify({ members: st.members, services: st.services, pushed }, null, 2));
          return true;
        }
        // Ours beyond the reference's lines: on stderr, so stdout stays byte-for-byte the reference's
        // (docs/federation.md promises it) and a script written for bridge.py reads it unchanged.
        for (const m of st.members)
          process.stderr.write(
            `[bridge] ${m.name}: ${m.nodesReady}/${m.nodes} nodes Ready · ${m.podsRunning}/${m.pods} pods Running · ${m.freeCpu}m CPU free\n`,
          );
        return true;
      });
    });

  endpoints(bridge.command('sync').description('two-way federation sync (union reconcile)'))
    .option('--interval <s>', 'loop every N seconds (0 = one pass)', wholeNumber('--interval'), 0)
    .addHelpText(
      'after',
      '\nSame-named deployments are never touched; a name held with different specs is reported as a conflict.\nExample:\n  retrokube sheets bridge sync --interval 60 --local http://127.0.0.1:8801 --peer http://127.0.0.1:8802\n',
    )
    .action(async (o: EndpointFlags & { interval: number }) => {
      const json = o.output === 'json';
      await guarded(json, async () => {
        const { local, peer } = membersOf(o);
        for (;;) {
          const r = await syncOnce([local, peer]);
          if (json)
            say(JSON.stringify({ to_local: r.copied.local, to_peer: r.copied.peer, conflicts: r.conflicts }));
          else {
            say(`[sync] +${r.copied.local.length} -> local, +${r.copied.peer.length} -> peer`);
            for (const c of r.conflicts)
              say(`[sync] conflict: '${c.name}' differs between ${c.members.join(' and ')} (left alone)`);
          }
          if (!o.interval) return true;
          await new Promise((res) => setTimeout(res, o.interval * 1000));
        }
      });
    });

  endpoints(
    bridge.command('stretch').description("split a deployment's replicas over both clusters by free CPU"),
  )
    .argument('<deploy>', 'deployment name (must exist on local or peer)')
    .requiredOption('--replicas <n>', 'total replicas', wholeNumber('--replicas', 0, 100_000))
    .option(
      '--cpu <m>',
      "millicores per replica (default: the deployment's cpu_req)",
      wholeNumber('--cpu', 1, 1_000_000),
    )
    .option('--plan', 'print the split and write nothing')
    .option('--allow-unplaced', 'apply even when some replicas fit nowhere')
    .option(
      '--wait <s>',
      'seconds the growing side may take to run its share before the other shrinks',
      wholeNumber('--wait'),
      120,
    )
    .option('--poll <s>', 'seconds between checks', wholeNumber('--poll', 1), 3)
    .addHelpText(
      'after',
      '\nRule: local fills first, then the peer; each takes what its scheduler could place: per Ready node,\nfloor((free CPU + what pods of this deployment there hold) / cpu). Replicas that fit nowhere are\nreported, never ordered blindly.\nExample:\n  retrokube sheets bridge stretch web --replicas 10 --cpu 300 --plan --local http://127.0.0.1:8801 --peer http://127.0.0.1:8802\n',
    )
    .action(
      async (
        deploy: string,
        o: EndpointFlags & {
          replicas: number;
          cpu?: number;
          plan?: boolean;
          allowUnplaced?: boolean;
          wait: number;
          poll: number;
        },
      ) => {
        const json = o.output === 'json';
        await guarded(json, async () => {
          const { local, peer } = membersOf(o);
          const r = await stretch([local, peer], deploy, {
            replicas: o.replicas,
            cpu: o.cpu,
            planOnly: Boolean(o.plan),
            allowUnplaced: Boolean(o.allowUnplaced),
            waitSec: o.wait,
            pollMs: o.poll * 1000,
            log: json ? () => {} : say,
          });
          if (json) say(JSON.stringify({ ...r.plan, applied: r.applied }));
          else {
            say(`[stretch] ${describeStretch(r.plan, r.members)}`);
            say(r.applied ? '[stretch] applied' : '[stretch] plan only (nothing written)');
          }
          return true;
        });
      },
    );

  endpoints(
    bridge.command('migrate').description('live-migrate a deployment across clusters (make-before-break)'),
  )
    .argument('<deploy>', 'deployment name')
    .addOption(new Option('--from <side>', 'source').choices(['local', 'peer']).default('local'))
    .addOption(new Option('--to <side>', 'target').choices(['local', 'peer']).default('peer'))
    .option('--wait <s>', 'seconds the target may take to run every replica', wholeNumber('--wait'), 120)
    .option('--poll <s>', 'seconds between checks', wholeNumber('--poll', 1), 3)
    .option('--skip-wait', "don't wait for target readiness (demo without node agents)")
    .option(
      '--rollback-window <s>',
      'after cutover, watch the target this many seconds and roll back if it degrades',
      wholeNumber('--rollback-window'),
      0,
    )
    .option('--no-capacity-check', "don't refuse a target whose free CPU cannot hold the replicas")
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets bridge migrate web --from local --to peer --rollback-window 30 \\\n    --local http://127.0.0.1:8801 --peer http://127.0.0.1:8802 --peer-signing-key-file peer.key\n',
    )
    .action(
      async (
        deploy: string,
        o: EndpointFlags & {
          from: 'local' | 'peer';
          to: 'local' | 'peer';
          wait: number;
          poll: number;
          skipWait?: boolean;
          rollbackWindow: number;
          capacityCheck: boolean;
        },
      ) => {
        const json = o.output === 'json';
        if (o.from === o.to) {
          say('[migrate] --from and --to must differ');
          process.exitCode = 2;
          return;
        }
        await guarded(json, async () => {
          const m = membersOf(o);
          const spec: MigrationSpec = {
            deploy,
            waitSec: o.wait,
            rollbackWindowSec: o.rollbackWindow,
            skipWait: Boolean(o.skipWait),
            checkCapacity: o.capacityCheck,
          };
          const lines: string[] = [];
          let lastProgress = '';
          let lastAt = 0;
          const final = await migrate(m[o.from], m[o.to], spec, {
            pollMs: o.poll * 1000,
            log: (l) => {
              lines.push(l);
              if (!json) say(`[migrate] ${l}`);
            },
            progress: (obs, s) => {
              const where = s.phase === 'RollingBack' ? 'source' : 'target';
              const running = s.phase === 'RollingBack' ? obs.source.running : obs.target.running;
              const line = `${s.phase}: ${where} ${running}/${s.replicas ?? 0} Running`;
              if (json || (line === lastProgress && Date.now() - lastAt < 10_000)) return;
              lastProgress = line;
              lastAt = Date.now();
              process.stderr.write(
                `[migrate] … ${line} (${Math.round((obs.nowMs - s.phaseSinceMs) / 1000)}s)\n`,
              );
            },
          });
          const res = migrationResult(spec, final);
          if (json) say(JSON.stringify({ ...res, phase: final.phase, log: lines }));
          else say(`[migrate] ${res.ok ? 'done: ' : 'FAILED: '}${pyJson(res)}`);
          return res.ok === true;
        });
      },
    );
}

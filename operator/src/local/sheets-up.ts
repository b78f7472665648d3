// `retrokube sheets up`: the embedded default. An apiserver over a local workbook, N node agents as
// child processes (`retrokube sheets node`, agents.ts), the sample deployments, the ctl tables, and
// a web console on loopback (console/server.ts with its sheets part) until Ctrl-C.
// Nodes are never faked: if the node agent cannot start, `up` says so and runs the apiserver alone.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newConsoleToken } from '../console/access.ts';
import type { ConsoleServer } from '../console/server.ts';
import { openWorkbook } from '../sheets/apiserver/open.ts';
import { createApiServer } from '../sheets/apiserver/server.ts';
import { DEFAULT_TOKEN, SheetsClient } from '../sheets/ctl/client.ts';
import { renderTable } from '../sheets/ctl/table.ts';
import { agentName, NodeAgents } from '../sheets/local/agents.ts';
import { localCredentials } from '../sheets/local/credentials.ts';
import { SAMPLE_DEPLOYMENTS } from '../sheets/store/schema.ts';
import { ensureSampleImages } from '../sheets/store/setup.ts';
import { privateSecret } from '../util/private-file.ts';

export { nodeAgentArgs, nodeAgentEnv } from '../sheets/local/agents.ts';

export const LIMITS = {
  agentProbeMs: 20_000, // `sheets node --help` must answer within this to count as available
  pollMs: 500, // how often `up` looks at the Pods tab while waiting
} as const;

const MAIN = fileURLToPath(new URL('../cli/main.ts', import.meta.url));

/** Healthy for a person looking at the table: running, or finished well (restart_policy OnFailure/Never). */
const settled = (p: Record<string, unknown>): boolean => p.phase === 'Running' || p.phase === 'Succeeded';

export interface UpOptions {
  nodes: number;
  workbook: string;
  port: number;
  token: string;
  waitSec: number;
  detach: boolean;
  /** Start the node agents with the process runtime (the `web` sample needs it); named opt-in. */
  allowProcess?: boolean;
  out?: (s: string) => void;
  /** Where the node agents' output (their JSON log lines) goes: an open file or fd; default: their stderr only, to ours. */
  agentOutput?: number;
  /** Every POST must be signed with this key (the agents and the console sign theirs). */
  signingKey?: string;
  /** Port of the web console on 127.0.0.1 (0 = any free port); null or absent = no console. */
  consolePort?: number | null;
}

/**
 * With the process runtime on, the well-known token would let every user of this host run commands:
 * a token and signing key of this workbook's own (0600 files beside it) replace it.
 */
export function withPrivateCredentials(o: UpOptions, out: (s: string) => void): UpOptions {
  if (!o.allowProcess || o.token !== DEFAULT_TOKEN) return o;
  const c = localCredentials(resolve(o.workbook));
  out(
    `the process runtime is on: this cluster's token is in ${c.tokenFile} and its signing key in ${c.keyFile} (0600; skctl --token-file ${c.tokenFile} --key-file ${c.keyFile})\n`,
  );
  return { ...o, token: c.token, signingKey: o.signingKey ?? c.key };
}

/**
 * The console's token (#28.13), kept in `<base>-token` (0600) so a restarted console lets the open
 * pages act again; BASE is a folder (the `up` state folder) or a file prefix.
 */
export function consoleToken(base: string): string {
  const file =
    existsSync(base) && statSync(base).isDirectory() ? join(base, 'console-token') : `${base}-token`;
  return privateSecret(file, newConsoleToken);
}

/** Whether this build has the node agent verb. */
export function nodeAgentAvailable(): boolean {
  const r = spawnSync(process.execPath, [MAIN, 'sheets', 'node', '--help'], {
    timeout: LIMITS.agentProbeMs,
    encoding: 'utf8',
  });
  return r.status === 0;
}

export interface UpResult {
  agents: number;
  running: number;
  succeeded: number;
  /** Every sample pod Running or Succeeded before the deadline. */
  settled: boolean;
  /** Seconds from start to settled (or to the deadline). */
  seconds: number;
}

export async function runUp(given: UpOptions): Promise<UpResult> {
  const t0 = Date.now();
  const out = given.out ?? ((s: string) => process.stdout.write(s));
  const o = withPrivateCredentials(given, out);
  const store = await openWorkbook(o.workbook);
  const server = await createApiServer({
    store,
    token: o.token,
    samples: true,
    signingKey: o.signingKey,
  });
  const addr = await server.listen(o.port, '127.0.0.1');
  out(
    `apiserver listening on ${addr} · workbook ${o.workbook} (${store.backend})${o.signingKey ? ' · every POST must be signed' : ''}\n`,
  );
  const client = new SheetsClient({ url: addr, token: o.token, key: o.signingKey });
  // The samples exist in a brand-new workbook; in an existing one, add any that are missing.
  const have = new Set(store.rows('Deployments').map((d) => String(d.name)));
  const missing = SAMPLE_DEPLOYMENTS.filter((d) => !have.has(String(d.name)));
  if (missing.length > 0) {
    await store.transact((tx) => ensureSampleImages(tx, store.limits.maxCellChars));
    await client.post({ action: 'apply', deployments: missing });
  }

  const agents = new NodeAgents({
    url: addr,
    token: o.token,
    signingKey: o.signingKey,
    allowProcess: o.allowProcess,
    output: o.agentOutput,
  });
  if (o.nodes > 0) {
    if (nodeAgentAvailable()) {
      for (let i = 0; i < o.nodes; i++) agents.start(agentName(i));
      out(
        `started ${agents.size} node agents (retrokube sheets node)${o.allowProcess ? ' with the process runtime: deployments with image "process" run their command on this host' : '; the process runtime is off (the web sample stays Pending; --allow-process runs it)'}\n`,
      );
    } else {
      out(
        'the node agent (`retrokube sheets node`) is not available in this build: running the apiserver alone, with no nodes\n',
      );
    }
  }

  let web: ConsoleServer | null = null;
  const stopAll = async () => {
    await web?.close();
    await agents.stopAll();
    await server.close();
    await store.close();
  };

  // Wait for the pods to run (or the deadline), then show the cluster.
  const deadline = Date.now() + o.waitSec * 1000;
  let pods = await client.get('pods');
  while (agents.size > 0 && Date.now() < deadline) {
    if (pods.length > 0 && pods.every(settled)) break;
    await new Promise((r) => setTimeout(r, LIMITS.pollMs));
    pods = await client.get('pods');
  }
  out(`\n${renderTable('nodes', await client.get('nodes'))}\n${renderTable('pods', pods)}`);
  const result: UpResult = {
    agents: agents.size,
    running: pods.filter((p) => p.phase === 'Running').length,
    succeeded: pods.filter((p) => p.phase === 'Succeeded').length,
    settled: pods.length > 0 && pods.every(settled),
    seconds: (Date.now() - t0) / 1000,
  };
  if (o.detach) {
    await stopAll();
    return result;
  }
  if (o.consolePort !== null && o.consolePort !== undefined) {
    try {
      // esbuild, ws and the page load only when a console really starts
      const { startConsole } = await import('../console/server.ts');
      web = await startConsole(
        { sheets: { name: basename(o.workbook), client, agents } },
        { port: o.consolePort, token: consoleToken(`${resolve(o.workbook)}.console`) },
      );
      out(`web console ${web.openUrl} (loopback only; without its token it is read-only)\n`);
    } catch (e) {
      // The cluster runs on without it: the console is a window, not a part.
      out(`the web console did not start (${(e as Error).message}); the cluster runs without it\n`);
    }
  }
  out(
    `\nrunning; try: retrokube skctl --server ${addr} --token-file <file> get pods   (Ctrl-C stops the cluster)\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await stopAll();
  return result;
}

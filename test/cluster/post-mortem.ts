// What a failed real-node test leaves behind to read: CI shows only the end of a run, so a
// failure must say in its own message what it saw last, and print the state of its namespace
// (our objects' conditions, KubeVirt's VMIs, the pods, warning events, the operator's warnings)
// before the namespace goes.
import { beforeEach } from 'vitest';
import { type Deep, events, getJson, kubectl } from './harness.ts';

const LIMITS = {
  events: 15, // the newest warning events printed
  operatorLines: 20, // the newest operator log lines of level warn or worse
  messageChars: 160, // of one condition's message
} as const;

const clip = (s: string, n: number = LIMITS.messageChars): string => (s.length > n ? `${s.slice(0, n)}…` : s);

/** One object's conditions on a line: `Ready=False(NodesNotReady: …) Applied=…`. */
export function conditionsLine(o: Deep): string {
  return (o?.status?.conditions ?? [])
    .map((c: Deep) => `${c.type}=${c.status}(${c.reason ?? ''}${c.message ? `: ${clip(c.message)}` : ''})`)
    .join(' ');
}

/** An OberonKube's status on a line: what a test waiting for it to converge saw last. */
export function kubeLine(k: Deep): string {
  const st = k?.status ?? {};
  return `nodes ${st.nodes ?? '?'}, running pods ${st.runningPods ?? '?'}, plane heard ${st.planeHeard ?? '?'}; ${conditionsLine(k) || 'no conditions'}`;
}

async function lines(args: string[]): Promise<string> {
  return (await kubectl(args).catch((err: Error) => `(${args.join(' ')}: ${clip(err.message)})`)).trimEnd();
}

/** The namespace as it stands, for a person reading a failed run. */
export async function namespaceReport(ns: string): Promise<string> {
  const out: string[] = [`== post-mortem of namespace ${ns}`];
  for (const kind of ['oberonkubes', 'oberonmachines', 'oberonairs', 'sheetclusters']) {
    const items: Deep[] = (await getJson([kind, '-n', ns]).catch(() => ({ items: [] }))).items;
    for (const o of items)
      out.push(`${kind} ${o.metadata.name}: ${kind === 'oberonkubes' ? kubeLine(o) : conditionsLine(o)}`);
  }
  const vmis: Deep[] = (await getJson(['vmi', '-n', ns]).catch(() => ({ items: [] }))).items;
  for (const v of vmis)
    out.push(
      `vmi ${v.metadata.name}: ${v.status?.phase ?? '?'} on ${v.status?.nodeName ?? '?'} (${conditionsLine(v)})`,
    );
  out.push(await lines(['get', 'pods', '-n', ns, '-o', 'wide']));
  const warnings = (await events(ns).catch(() => []))
    .filter((e) => e.type === 'Warning')
    .slice(-LIMITS.events);
  for (const e of warnings)
    out.push(
      `event ${e.lastTimestamp ?? e.eventTime} ${e.involvedObject?.kind}/${e.involvedObject?.name} ${e.reason}: ${clip(e.message ?? '')}`,
    );
  const log = await lines(['logs', '-n', ns, '-l', 'app.kubernetes.io/component=operator', '--tail=2000']);
  const bad = log.split('\n').filter((l) => /"level":(4|5|6)\d/.test(l));
  out.push(
    `operator: ${bad.length} warning line(s); the newest:`,
    ...bad.slice(-LIMITS.operatorLines).map((l) => clip(l, 400)),
  );
  return out.join('\n');
}

/** Prints the namespace's post-mortem when a test of this file fails (`ns` read at that moment). */
export function reportOnFailure(ns: () => string | undefined): void {
  beforeEach(({ onTestFailed }) => {
    onTestFailed(async () => {
      const name = ns();
      if (name)
        console.log(await namespaceReport(name).catch((err: Error) => `post-mortem failed: ${err.message}`));
    }, 60_000);
  });
}

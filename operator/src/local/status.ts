// `retrokube status`: where the running `up` listens, read from its state file. The live view's
// start-up lines scroll away (and the view runs on the alternate screen); this keeps every address
// reachable from any terminal.
import type { UpState } from './state.ts';

/** The addresses of a running `up`, one per line, aligned; `cli` is how hints name the command. */
export function formatStatus(st: UpState, dir: string, cli: string): string {
  const rows: [string, string][] = [];
  if (st.console) rows.push(['web console', `${st.console}  (loopback only)`]);
  if (st.sheets) rows.push(['apiserver', `${st.sheets.url}  (${cli} skctl get pods)`]);
  for (const c of st.fleet?.clusters ?? []) {
    if (c.url) rows.push([`${c.name} apiserver`, c.url]);
    if (c.air) rows.push([`${c.name} air`, `udp/127.0.0.1:${c.air.port}, control ${c.air.control}`]);
  }
  rows.push([
    'air',
    `udp/${st.air.host ?? '127.0.0.1'}:${st.air.port}${st.air.control ? `, control ${st.air.control}` : ''} (cluster ${st.cluster})`,
  ]);
  rows.push(['up control', st.control]);
  for (const m of st.machines) {
    const vnc = m.vnc !== null ? `VNC 127.0.0.1:${m.vnc}` : 'no VNC';
    const power = m.on === false ? ', off' : '';
    rows.push([m.name, `${m.role}, ${vnc}${power}, disk ${m.disk}`]);
  }
  if (st.vncPasswordFile)
    rows.push([
      'VNC password',
      `the first line of ${st.vncPasswordFile} (mode 0600): cat ${st.vncPasswordFile}`,
    ]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return [
    `retrokube up: pid ${st.pid}, started ${st.startedAt}, state in ${dir}`,
    ...rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`),
  ].join('\n');
}

// The page: machine screens, the cluster as heard on the air, the frame log with verdicts, the
// break controls, a command box, the six labs, and a sheet cluster's tabs and controls (beside
// `up`'s Oberon cluster, or alone for `sheets up`).
// One page for both worlds: it only talks to a Backend (the console server, or the in-page lab).
import type { ClusterView, FrameRecord } from '../../air/view.ts';
import { age, cellTime } from '../../sheets/ctl/table.ts';
import { LABS, type LabWorld } from '../labs.ts';
import { checkNames, parseSheetsCommand } from '../sheets-command.ts';
import {
  type ConsoleState,
  INTRUDER_LABELS,
  INTRUDERS,
  type SheetsAction,
  type SheetsTabs,
} from '../types.ts';
import type { Backend, ScreenLink } from './backend.ts';
import { plotMetrics, renderRows } from './render.ts';
import { wireInput, wireZoom } from './screen.ts';

export const LIMITS = {
  keepRecords: 10_000, // frames the labs can look back on (about 10 minutes of a 3-machine air)
  logLines: 200, // frames shown in the log
} as const;

const $ = <T extends HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e as T;
};
const el = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> = {},
  ...kids: (Node | string)[]
): HTMLElementTagNameMap[K] => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...kids);
  return e;
};

async function makeBackend(): Promise<Backend> {
  const mode = document.querySelector('meta[name="retrokube-mode"]')?.getAttribute('content');
  if (mode === 'lab') {
    const { LabBackend } = await import('./lab-backend.ts');
    return new LabBackend();
  }
  const { ServerBackend } = await import('./server-backend.ts');
  return new ServerBackend();
}

function main(backend: Backend): void {
  let state: ConsoleState | null = null;
  let view: ClusterView | null = null;
  const records: FrameRecord[] = [];
  let logDirty = false;
  const screens = new Map<string, { link: ScreenLink | null; canvas: HTMLCanvasElement; on: boolean }>();
  let linkUp = false;

  const notice = (text: string, bad = false): void => {
    const n = $('notices');
    n.prepend(el('div', { className: bad ? 'bad' : '' }, `${new Date().toLocaleTimeString()} ${text}`));
    while (n.childElementCount > 8) n.lastElementChild?.remove();
  };
  const act = (what: string, p: Promise<unknown>): void => {
    p.catch((e: Error) => notice(`${what}: ${e.message}`, true));
  };

  // --- machines: screen + power + cut, rebuilt when the set of machines changes
  const drawMachines = (): void => {
    if (!state) return;
    const box = $('machines');
    const names = state.machines.map((m) => m.name).join();
    if (box.dataset.names !== names) {
      for (const s of screens.values()) s.link?.close();
      screens.clear();
      box.replaceChildren();
      box.dataset.names = names;
      for (const m of state.machines) {
        const canvas = el('canvas', { width: 1024, height: 768, className: 'screen' });
        canvas.dataset.machine = m.name;
        const status = el('span', { className: 'screen-status' }, '');
        const power = el('button', { className: 'power' });
        const cut = el('button', { className: 'cut' });
        // The screen fits the page at a scale the caption states; "1:1" shows it pixel for pixel
        // (scrolled inside its frame when the window is narrower than the screen).
        const zoom = el('button', { className: 'zoom', title: 'show the screen pixel for pixel' }, '1:1');
        const scale = el('span', { className: 'scale' });
        zoom.dataset.machine = m.name;
        power.dataset.machine = m.name;
        cut.dataset.machine = m.name;
        power.onclick = () => {
          const on = power.dataset.on !== 'true';
          act(`switch ${m.name} ${on ? 'on' : 'off'}`, backend.power(m.name, on));
        };
        cut.onclick = () => {
          const cutNow = cut.dataset.cut === 'true';
          act(
            `${cutNow ? 'restore' : 'cut'} ${m.name}`,
            backend.air(cutNow ? { op: 'restore', target: m.name } : { op: 'cut', target: m.name }),
          );
        };
        const entry = { link: null as ScreenLink | null, canvas, on: false };
        screens.set(m.name, entry);
        wireInput(canvas, () => entry.link);
        box.append(
          el(
            'figure',
            { className: 'machine', id: `machine-${m.name}` },
            el('div', { className: 'screen-box' }, canvas),
            el(
              'figcaption',
              {},
              el('b', {}, `${m.name} (${m.role})`),
              ' ',
              status,
              ' ',
              power,
              ' ',
              cut,
              ' ',
              zoom,
              ' ',
              scale,
            ),
          ),
        );
        wireZoom(canvas, zoom, scale);
        const setStatus = (t: string): void => {
          status.textContent = t;
        };
        if (m.screen) entry.link = backend.screen(m.name, canvas, setStatus);
        else setStatus('no screen (started with --no-vnc)');
      }
    }
    for (const m of state.machines) {
      const fig = $(`machine-${m.name}`);
      fig.classList.toggle('off', !m.on);
      const power = fig.querySelector<HTMLButtonElement>('button.power');
      const cut = fig.querySelector<HTMLButtonElement>('button.cut');
      const isCut = state.air.cuts.includes(m.name);
      if (power) {
        power.dataset.on = String(m.on);
        power.textContent = m.on ? 'power off' : 'power on';
      }
      if (cut) {
        cut.dataset.cut = String(isCut);
        cut.textContent = isCut ? 'restore to the air' : 'cut from the air';
      }
    }
  };

  // --- air controls
  const airBtn = $('air-power') as HTMLButtonElement;
  airBtn.onclick = () => act('air', backend.air({ op: state?.air.on ? 'off' : 'on' }));
  const loss = $('loss') as HTMLInputElement;
  loss.onchange = () => act('loss', backend.air({ op: 'loss', loss: Number(loss.value) / 100 }));
  const intruders = $('intruders');
  for (const k of INTRUDERS) {
    const b = el('button', { className: 'intruder' }, INTRUDER_LABELS[k]);
    b.dataset.kind = k;
    b.onclick = () =>
      act(
        `intruder ${k}`,
        backend
          .inject(k)
          .then((r) =>
            notice(
              `intruder "${INTRUDER_LABELS[k]}" → ${r.node}: ${r.times.length} forgeries${r.note ? ` (${r.note})` : ''}`,
            ),
          ),
      );
    intruders.append(b);
  }
  const drawAir = (): void => {
    if (!state) return;
    airBtn.textContent = state.air.on ? 'switch the air off' : 'switch the air on';
    $('air-status').textContent =
      `air ${state.air.on ? 'on' : 'OFF'}, loss ${Math.round(state.air.loss * 100)} %${state.air.cuts.length ? `, cut: ${state.air.cuts.join(', ')}` : ''}`;
    if (document.activeElement !== loss) loss.value = String(Math.round(state.air.loss * 100));
    $('loss-value').textContent = `${loss.value} %`;
  };
  loss.oninput = () => {
    $('loss-value').textContent = `${loss.value} %`;
  };

  // --- command box
  const cmdForm = $('command-form') as HTMLFormElement;
  cmdForm.onsubmit = (e) => {
    e.preventDefault();
    const input = $('command') as HTMLInputElement;
    const text = input.value.trim();
    if (!text) return;
    act(
      'command',
      backend.command(text).then(() => {
        notice(`typed into the plane: ${text}`);
        if (input.value.trim() === text) input.value = ''; // not what a person typed meanwhile
      }),
    );
  };

  // --- the cluster as heard
  const drawView = (): void => {
    if (!view) return;
    const v = view;
    const planeAge = v.plane.ageMs === null ? 'never' : `${(v.plane.ageMs / 1000).toFixed(1)} s ago`;
    $('summary').textContent =
      `cluster tag ${v.cluster} · plane heard ${planeAge} · nodes ${v.readyNodes}/${v.nodes.length} Ready · pods running ${v.running} · ${v.converged ? 'CONVERGED' : 'converging'}`;
    $('summary').className = v.converged ? 'good' : 'wait';
    const nodes = v.nodes.map((n) => ({
      node: n.name,
      status: n.ready ? (n.converged ? 'Ready' : 'Ready*') : 'NotReady',
      heard: n.ageMs === null ? '-' : `${(n.ageMs / 1000).toFixed(1)} s ago`,
      // A NotReady node's last report is history, not what it runs now (as in the terminal view).
      runs: n.ready ? n.running.join(' ') || '-' : '-',
      assigned: n.assigned ? n.assigned.join(' ') : '-',
      flaps: n.flaps,
    }));
    const syncing = v.nodes.some((n) => n.ready && !n.converged);
    $('nodes').replaceChildren(
      renderRows(nodes),
      ...(syncing ? [el('p', {}, '* Ready, still starting or stopping pods to match its assignment')] : []),
    );
    // Pods neither assigned nor running are history (replaced by a rollout, scaled away).
    const live = v.pods.filter((p) => p.assignedTo.length > 0 || p.runningOn.length > 0);
    const pods = live.map((p) => ({
      pod: p.id,
      image: p.image ?? '?',
      assigned: p.assignedTo.join(', ') || '-',
      running: p.runningOn.join(', ') || '-',
    }));
    $('pods').replaceChildren(
      renderRows(pods),
      ...(live.length < v.pods.length
        ? [el('p', {}, `${v.pods.length - live.length} earlier pods not shown`)]
        : []),
    );
    const c = v.counts;
    $('counts').textContent =
      `frames ${c.frames}: ok ${c.ok}, forged ${c.forged}, stale ${c.stale}, other cluster ${c.otherCluster}, malformed ${c.malformed}`;
  };

  const drawLog = (): void => {
    if (!logDirty) return;
    logDirty = false;
    const t0 = records[0]?.t ?? 0;
    const lines = records.slice(-LIMITS.logLines).map((r) => {
      const t = ((r.t - t0) / 1000).toFixed(2).padStart(8);
      const what =
        r.kind === 'spec'
          ? `spec      [${r.cluster}] id ${r.id} ${r.image}`
          : r.kind === 'refusal'
            ? `refusal   [${r.cluster}] ${r.part ?? ''} "${r.text ?? ''}"`
            : r.kind
              ? `${r.kind.padEnd(9)} [${r.cluster}] ${(r.node ?? '').padEnd(7)} [${(r.ids ?? []).join(', ')}]`
              : `typ ${r.typ}`;
      return el(
        'div',
        { className: `v-${r.verdict}` },
        `${t}  ${what}  ${r.verdict}${r.reason ? ` (${r.reason})` : ''}`,
      );
    });
    const log = $('log');
    const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 20;
    log.replaceChildren(...lines);
    if (stick) log.scrollTop = log.scrollHeight;
  };
  setInterval(drawLog, 500);

  // --- labs
  const world: LabWorld = {
    state: () => {
      if (!state) throw new Error('not connected to a cluster');
      return state;
    },
    view: () => {
      if (!view) throw new Error('nothing heard yet');
      return view;
    },
    records: () => records,
    power: (n, on) => backend.power(n, on),
    air: (op) => backend.air(op),
    inject: (k) => backend.inject(k),
    command: (t) => backend.command(t),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    now: () => performance.now(),
  };
  // For people (and tests) in the browser's console: what the page heard.
  Object.assign(globalThis, { retrokubeRecords: () => records });
  let labBusy = false;
  const runLab = async (n: number): Promise<boolean> => {
    const lab = LABS.find((l) => l.n === n);
    const row = $(`lab-${n}`);
    const status = row.querySelector('.status') as HTMLElement;
    if (!lab) return false;
    row.className = 'lab running';
    status.textContent = 'running';
    try {
      const r = await lab.run(world, (t) => {
        status.textContent = t;
      });
      row.className = `lab ${r.pass ? 'pass' : 'fail'}`;
      status.textContent = `${r.pass ? 'PASS' : 'FAIL'}: ${r.detail}`;
      return r.pass;
    } catch (e) {
      row.className = 'lab fail';
      status.textContent = `FAIL: ${(e as Error).message}`;
      return false;
    }
  };
  const labsBox = $('labs');
  const guarded = (f: () => Promise<unknown>) => () => {
    if (labBusy) return notice('a lab is running; wait for it to finish', true);
    labBusy = true;
    document.body.classList.add('lab-busy');
    f().finally(() => {
      labBusy = false;
      document.body.classList.remove('lab-busy');
    });
  };
  for (const lab of LABS) {
    const b = el('button', {}, 'run');
    b.onclick = guarded(() => runLab(lab.n));
    labsBox.append(
      el(
        'li',
        { id: `lab-${lab.n}`, className: 'lab' },
        el('b', {}, `${lab.n}. ${lab.title}`),
        ' ',
        b,
        el('div', { className: 'goal' }, lab.goal),
        el('div', { className: 'status' }, 'not run'),
      ),
    );
  }
  ($('run-all') as HTMLButtonElement).onclick = guarded(async () => {
    let passed = 0;
    for (const lab of LABS) if (await runLab(lab.n)) passed++;
    $('labs-summary').textContent = `${passed}/${LABS.length} labs passed`;
  });

  // --- Sheeternetes: its tabs, events and Metrics plot; controls when the server may steer it
  let sheets: SheetsTabs | null = null;
  const deploymentSel = $('sheets-deployment') as HTMLSelectElement;
  const replicasIn = $('sheets-replicas') as HTMLInputElement;
  const nodeSel = $('sheets-node') as HTMLSelectElement;
  const agentBtn = $('sheets-agent') as HTMLButtonElement;
  const steer = backend.sheets?.bind(backend);
  const sheetsAct = (what: string, a: SheetsAction): void => {
    if (steer) act(what, steer(a));
    else notice(`${what}: this page cannot steer a sheet cluster`, true);
  };
  /** Replaces a select's options when the set changed, keeping what a person picked. */
  const fill = (sel: HTMLSelectElement, names: string[]): void => {
    if (sel.dataset.names === names.join()) return;
    const keep = sel.value;
    sel.replaceChildren(...names.map((n) => el('option', { value: n }, n)));
    sel.dataset.names = names.join();
    if (names.includes(keep)) sel.value = keep;
  };
  const replicasOf = (name: string): string => {
    const d = sheets?.tabs.deployments?.find((r) => r.name === name);
    return d ? String(d.replicas ?? '') : '';
  };
  const drawAgentButton = (): void => {
    const agent = sheets?.agents?.find((a) => a.name === nodeSel.value);
    agentBtn.disabled = !agent;
    agentBtn.dataset.on = String(agent?.on ?? false);
    agentBtn.textContent = !agent
      ? 'its agent is not run here'
      : agent.on
        ? `stop ${agent.name}'s agent`
        : `start ${agent.name}'s agent`;
  };
  deploymentSel.onchange = () => {
    replicasIn.value = replicasOf(deploymentSel.value);
  };
  nodeSel.onchange = drawAgentButton;
  $('sheets-scale').onclick = () => {
    const replicas = Number(replicasIn.value);
    if (!deploymentSel.value || replicasIn.value === '' || !Number.isInteger(replicas) || replicas < 0)
      return notice('scale: pick a deployment and a whole number of replicas', true);
    sheetsAct(`scale ${deploymentSel.value}`, { op: 'scale', deployment: deploymentSel.value, replicas });
  };
  for (const b of document.querySelectorAll<HTMLButtonElement>('button.sheets-node-op'))
    b.onclick = () => {
      const op = b.dataset.op as 'cordon' | 'uncordon' | 'drain';
      if (!nodeSel.value) return notice(`${op}: pick a node`, true);
      sheetsAct(`${op} ${nodeSel.value}`, { op, node: nodeSel.value });
    };
  agentBtn.onclick = () => {
    const on = agentBtn.dataset.on !== 'true';
    sheetsAct(`${on ? 'start' : 'stop'} ${nodeSel.value}'s agent`, { op: 'agent', node: nodeSel.value, on });
  };
  ($('sheets-command-form') as HTMLFormElement).onsubmit = (e) => {
    e.preventDefault();
    const input = $('sheets-command') as HTMLInputElement;
    const text = input.value.trim();
    if (!text || !steer) return;
    // What the server would refuse is said here, without a request: the line's form and its names.
    try {
      checkNames(parseSheetsCommand(text), sheets?.tabs ?? {});
    } catch (err) {
      return notice(`skctl: ${(err as Error).message}`, true);
    }
    act(
      'skctl',
      steer({ op: 'command', text }).then(() => {
        if (input.value.trim() === text) input.value = ''; // not what a person typed meanwhile
      }),
    );
  };
  const drawSheets = (t: SheetsTabs): void => {
    sheets = t;
    $('sheets').hidden = false;
    if (!state && t.name) $('title').textContent = `Console: Sheeternetes "${t.name}"`;
    $('sheets-error').textContent = t.error
      ? `the sheet does not answer (${t.error}); the tables below are the last it showed`
      : '';
    $('sheets-controls').hidden = !(t.controls && steer);
    const names = (rows: Record<string, unknown>[] | undefined): string[] =>
      (rows ?? []).map((r) => String(r.name ?? '')).filter((n) => n !== '');
    fill(deploymentSel, names(t.tabs.deployments));
    const nodes = names(t.tabs.nodes);
    for (const a of t.agents ?? []) if (!nodes.includes(a.name)) nodes.push(a.name);
    fill(nodeSel, nodes);
    if (document.activeElement !== replicasIn && replicasIn.value === '')
      replicasIn.value = replicasOf(deploymentSel.value);
    drawAgentButton();
    const parts: Node[] = [];
    if (t.agents?.length)
      parts.push(
        el('h3', {}, 'node agents run by this console'),
        renderRows(t.agents.map((a) => ({ agent: a.name, process: a.on ? 'running' : 'stopped' }))),
      );
    const now = Date.now();
    const heartbeat = (v: unknown) => ({ text: age(cellTime(v), now), title: String(v ?? '') });
    for (const [tab, rows] of Object.entries(t.tabs)) {
      if (tab === 'metrics') continue;
      const table = renderRows(rows, { last_heartbeat: heartbeat });
      table.dataset.tab = tab;
      parts.push(el('h3', {}, tab), table);
    }
    if (t.tabs.metrics) parts.push(el('h3', {}, 'metrics'), plotMetrics(t.tabs.metrics));
    parts.push(el('h3', {}, 'events'), el('pre', { className: 'events' }, t.events.join('\n') || '(none)'));
    if (t.earlierEvents)
      parts.push(el('p', { className: 'hint' }, `${t.earlierEvents} events of earlier runs not shown`));
    $('sheets-body').replaceChildren(...parts);
  };

  backend.connect({
    state: (s) => {
      state = s;
      $('kube').hidden = false;
      $('title').textContent =
        `${s.kind === 'lab' ? 'Browser lab' : 'Console'}: Kube on Oberon "${s.name}" (cluster ${s.cluster})`;
      drawMachines();
      drawAir();
    },
    view: (v) => {
      view = v;
      drawView();
    },
    records: (rs, dropped) => {
      records.push(...rs);
      if (records.length > LIMITS.keepRecords) records.splice(0, records.length - LIMITS.keepRecords);
      logDirty = true;
      if (dropped > 0) $('dropped').textContent = `${dropped} frames not shown (the page fell behind)`;
    },
    link: (up, why) => {
      const banner = $('link');
      banner.textContent = why;
      banner.className = up ? 'up' : 'down';
      document.body.classList.toggle('offline', !up);
      if (up && !linkUp) {
        // Screens reconnect when the server comes back.
        const box = $('machines');
        box.dataset.names = '';
        drawMachines();
      }
      linkUp = up;
    },
    notice: (t) => notice(t),
    sheets: drawSheets,
  });
}

makeBackend()
  .then(main)
  .catch((e: Error) => {
    document.body.prepend(
      el('div', { id: 'fatal', className: 'bad' }, `The page could not start: ${e.message}`),
    );
  });

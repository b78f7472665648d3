// The contract of the page: what it is told about a cluster and what it may ask of it. Two sides
// implement it: the console server (server.ts, over HTTP and a WebSocket; the Oberon cluster of
// `retrokube up` in kube-part.ts, a sheet cluster in sheets-part.ts, or both) and the browser lab
// (page/lab-backend.ts, machines in Web Workers and the air in the page). Types only, so both Node
// and the page bundle import it.
import type { ClusterView, FrameRecord } from '../air/view.ts';

export type Role = 'plane' | 'node';

export interface MachineInfo {
  name: string;
  role: Role;
  on: boolean;
  /** The server has an RFB (VNC) server for it (the lab always draws its screens itself). */
  screen: boolean;
}

export interface AirState {
  on: boolean;
  /** Probability 0..1 that one delivery is lost. */
  loss: number;
  /** Cut machines (names or addresses). */
  cuts: string[];
}

export interface DeploymentInfo {
  name: string;
  replicas: number;
  module: string;
}

export interface ConsoleState {
  kind: 'console' | 'lab';
  /** The OberonKube's name. */
  name: string;
  cluster: string;
  /** The deployment the labs work on (the first one of the cluster). */
  deployment: DeploymentInfo;
  machines: MachineInfo[];
  air: AirState;
  /** The Sheeternetes apiserver running alongside, if any (its tabs are read through the console). */
  sheets: boolean;
}

/** The four intruder buttons of the reference lab. */
export const INTRUDERS = ['other-cluster', 'zero-key', 'replay', 'signed'] as const;
export type IntruderKind = (typeof INTRUDERS)[number];

export const INTRUDER_LABELS: Record<IntruderKind, string> = {
  'other-cluster': 'another cluster',
  'zero-key': 'unsigned',
  replay: 'replay',
  signed: 'signed',
};

/** What an intruder button did: the forgeries went out at `times` (the air's clock). */
export interface InjectReport {
  kind: IntruderKind;
  node: string;
  times: number[];
  /** Ids the node ran when the first forgery went out. */
  before: number[];
  /** Ids the forged frames list ([] = "run nothing"); for a replay, the replayed ids. */
  forgedIds: number[];
  note?: string;
}

export type AirOp =
  | { op: 'on' }
  | { op: 'off' }
  | { op: 'loss'; loss: number }
  | { op: 'cut'; target: string }
  | { op: 'restore'; target: string };

/** Everything that happens, pushed to the page. Times of records and `at` are the air's clock (ms). */
export type ConsoleEvent =
  | { t: 'state'; state: ConsoleState }
  | { t: 'view'; view: ClusterView }
  | { t: 'records'; records: FrameRecord[]; dropped: number }
  | { t: 'sheets'; tabs: SheetsTabs }
  | { t: 'notice'; text: string };

/** The Sheeternetes tabs as rows, read by the server from the apiserver. */
export interface SheetsTabs {
  /** The sheet cluster's name (its workbook), shown as the page's title when it is alone. */
  name?: string;
  /** Tab name → rows (objects with the tab's column names). */
  tabs: Record<string, Record<string, unknown>[]>;
  events: string[];
  /** Events in the sheet from before this run (not in `events`). */
  earlierEvents?: number;
  /** Node agents this console can stop and start (the ones `sheets up` runs), with whether they run. */
  agents?: { name: string; on: boolean }[];
  /** The console may steer this cluster (scale, cordon, agents, the command box). */
  controls?: boolean;
  error?: string;
}

/** What a page may ask of a sheet cluster; the server turns each into a call of the signed contract. */
export type SheetsAction =
  | { op: 'scale'; deployment: string; replicas: number }
  | { op: 'cordon' | 'uncordon' | 'drain'; node: string }
  | { op: 'agent'; node: string; on: boolean }
  | { op: 'command'; text: string };

/** The reply of every action: when it took effect on the air's clock. */
export interface Done {
  at: number;
  text?: string;
}

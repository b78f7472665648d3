// What the node agent asks of a runtime: start one pod, watch it exit, stop it — and, for a
// runtime whose pods outlive the agent (docker), hand back the ones still running.

export interface PodSpec {
  pod: string; // pod name, e.g. web-1
  node: string;
  deployment: string;
  image: string;
  command: string;
  env: Record<string, string>;
  cpuReq: number; // millicores
  memReq: number; // MiB
  ports: { host: number; container: number; proto: 'tcp' | 'udp' }[];
  specHash: string;
  secretFiles: { file: string; path: string }[]; // decoded secret on the host → path the pod expects
  logFile: string; // stdout and stderr go here (appended)
  module?: Uint8Array; // wasm: the verified module bytes
}

export interface Exit {
  code: number;
  message?: string;
}

export interface RunningPod {
  readonly id: string; // reported as container_id
  readonly exited: Promise<Exit>; // resolves once, when the pod stops for any reason
  /** What the runtime really published (docker's Ports text); absent = the assigned ports. */
  readonly ports?: string;
  stop(graceMs: number): Promise<void>;
}

/** A pod a runtime found still running from an earlier agent on this node. */
export interface Adopted {
  pod: string;
  specHash: string;
  deployment: string;
  run: RunningPod;
}

export interface Runtime {
  readonly name: 'wasm' | 'process' | 'docker';
  start(spec: PodSpec): Promise<RunningPod>;
  /** Pods of this node that outlived their agent (only runtimes whose pods can). */
  running?(node: string): Promise<Adopted[]>;
}

/**
 * The pod cannot start yet for a reason that is not the pod's fault (the daemon is away, the
 * image cannot be pulled): it stays Pending with this message and is tried again after a back-off,
 * without counting as a restart.
 */
export class PodWait extends Error {
  /** The reason is the node's, not this pod's (e.g. no daemon): said once for all pods. */
  readonly nodeWide: boolean;
  constructor(message: string, nodeWide = false) {
    super(message);
    this.nodeWide = nodeWide;
  }
}

// What the node agent asks of a runtime: start one pod, watch it exit, stop it.

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
  stop(graceMs: number): Promise<void>;
}

export interface Runtime {
  readonly name: 'wasm' | 'process' | 'docker';
  start(spec: PodSpec): Promise<RunningPod>;
}

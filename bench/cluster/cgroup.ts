// A pod's CPU and memory as this machine's cgroups count them (cgroup v1, the cgroupfs driver
// hack/node-up.sh runs the kubelet with): for benchmarks whose cluster runs on this machine.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface PodCgroup {
  /** CPU time of every process of the pod so far, ns. */
  cpuNs(): number;
  /** total_rss: anonymous memory of every process in the pod (page cache excluded), bytes. */
  rssBytes(): number;
}

/** The cgroup folders of the pod with this UID, whatever its QoS class. */
export function podCgroup(uid: string): PodCgroup {
  const find = (controller: string) =>
    ['', 'burstable/', 'besteffort/']
      .map((qos) => `/sys/fs/cgroup/${controller}/kubepods/${qos}pod${uid}`)
      .find((d) => existsSync(d));
  const cpu = find('cpuacct');
  const mem = find('memory');
  if (!cpu || !mem) throw new Error(`no cgroup of pod ${uid} on this machine (is the cluster this node?)`);
  return {
    cpuNs: () => Number(readFileSync(join(cpu, 'cpuacct.usage'), 'utf8')),
    rssBytes: () =>
      Number(/^total_rss (\d+)$/m.exec(readFileSync(join(mem, 'memory.stat'), 'utf8'))?.[1] ?? 0),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Cores used over `seconds` of wall time (ns of CPU per ns of wall) by what `sample` counts. */
export async function cpuShare(sample: () => number, seconds: number): Promise<number> {
  const a = sample();
  const t0 = process.hrtime.bigint();
  await sleep(seconds * 1000);
  return (sample() - a) / Number(process.hrtime.bigint() - t0);
}

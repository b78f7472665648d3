// From an order to a start: which runtime runs it (by the image's form), the image fetched from
// the cells and digest-verified (wasm), the secret files written, and the PodSpec the runtime gets.
// {wait} = the pod cannot start now, with the reason shown on its row.

import { closeSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { SheetsClient } from '../ctl/client.ts';
import { ImageError, pullImage } from '../images/sicf.ts';
import { isObjectName, pathInside } from '../names.ts';
import type { RunOrder } from '../scheduler/orders.ts';
import type { PodSpec, Runtime } from './runtimes/types.ts';
import { openFresh } from './workdir.ts';

export const LIMITS = {
  imageCacheEntries: 32, // verified modules kept in memory by layer digest
} as const;

export type RuntimeName = 'wasm' | 'process' | 'docker';

export type Plan = { runtime: Runtime; spec: PodSpec } | { wait: string };

export interface PlannerDeps {
  client: SheetsClient;
  runtimes: ReadonlyMap<RuntimeName, Runtime>;
  node: string;
  workDir: string; // secrets/ lives here
  log: Logger;
  logFile(pod: string): string;
}

export class PodPlanner {
  private readonly modules = new Map<string, Uint8Array>(); // layer digest → verified bytes
  private readonly d: PlannerDeps;
  constructor(deps: PlannerDeps) {
    this.d = deps;
  }

  async plan(o: RunOrder): Promise<Plan> {
    const image = String(o.image ?? '');
    let kind: RuntimeName;
    let module: Uint8Array | undefined;
    if (image === 'process' || image.startsWith('process:')) kind = 'process';
    else if (image.startsWith('sicf:') || image.startsWith('wasm:')) {
      const ref = image.replace(/^(sicf|wasm):/, '');
      const pulled = await this.pull(ref);
      if ('wait' in pulled) return pulled;
      if (pulled.wasm) {
        kind = 'wasm';
        module = pulled.wasm;
      } else {
        return {
          wait: `image ${image} is a container image in cells; running those needs Docker with SICF load, which this agent does not do`,
        };
      }
    } else kind = 'docker';
    const runtime = this.d.runtimes.get(kind);
    if (!runtime) {
      return {
        wait: `image ${image} needs the ${kind} runtime; this node runs ${[...this.d.runtimes.keys()].join(', ') || 'none'}`,
      };
    }
    const secretFiles = await this.secrets(o);
    return {
      runtime,
      spec: {
        pod: o.name,
        node: this.d.node,
        deployment: String(o.deployment ?? ''),
        image: kind === 'wasm' ? image.replace(/^(sicf|wasm):/, '') : image,
        command: String(o.command ?? ''),
        env: parseEnv(String(o.env ?? '')),
        cpuReq: Number(o.cpu_req) || 0,
        memReq: Number(o.mem_req) || 0,
        ports: parsePorts(String(o.ports ?? '')),
        specHash: String(o.spec_hash ?? ''),
        secretFiles,
        logFile: this.d.logFile(o.name),
        module,
      },
    };
  }

  // Fetch the image from the apiserver's Images/Layers tabs and verify every digest.
  private async pull(ref: string): Promise<{ wasm?: Uint8Array } | { wait: string }> {
    try {
      const [images, layers] = await Promise.all([this.d.client.get('images'), this.d.client.get('layers')]);
      const img = images.find((r) => r.name === ref);
      const firstLayer = String(img?.layers ?? '').split(',')[0];
      const cached = firstLayer ? this.modules.get(firstLayer) : undefined;
      if (cached && String(img?.layers).split(',').length === 1) return { wasm: cached };
      const pulled = pullImage({ images: images as never, layers: layers as never }, ref);
      if (pulled.config.architecture !== 'wasm') return {};
      const layer = pulled.layers[0];
      if (!layer || pulled.layers.length !== 1)
        return { wait: `image ${ref}: a wasm image must have exactly one layer` };
      this.modules.set(layer.digest, layer.bytes);
      while (this.modules.size > LIMITS.imageCacheEntries)
        this.modules.delete(this.modules.keys().next().value as string);
      return { wasm: layer.bytes };
    } catch (e) {
      if (e instanceof ImageError) return { wait: e.message };
      return { wait: `cannot fetch image ${ref}: ${e instanceof Error ? e.message : String(e)}` };
    }
  }

  private async secrets(o: RunOrder): Promise<{ file: string; path: string }[]> {
    const wanted = String(o.secret_files ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (wanted.length === 0) return [];
    const rows = await this.d.client.get('secrets');
    const out: { file: string; path: string }[] = [];
    for (const w of wanted) {
      const i = w.indexOf(':');
      const name = i < 0 ? w : w.slice(0, i);
      const target = i < 0 ? `/run/secrets/${name}` : w.slice(i + 1);
      if (!isObjectName(name) || !SECRET_TARGET.test(target)) {
        this.d.log.warn(
          { pod: o.name, item: w.slice(0, 64) },
          'secret_files item ignored: use secretName:/absolute/path',
        );
        continue;
      }
      const row = rows.find((r) => r.name === name);
      if (!row) {
        this.d.log.warn({ pod: o.name, secret: name }, 'secret not found');
        continue;
      }
      const data = String(row.data ?? '');
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) {
        this.d.log.warn({ pod: o.name, secret: name }, 'secret is not valid base64');
        continue;
      }
      const file = pathInside(path.join(this.d.workDir, 'secrets'), `${o.name}.${name}`);
      const fd = openFresh(file); // never through a link another user placed (#28.6)
      try {
        writeSync(fd, Buffer.from(data, 'base64'));
      } finally {
        closeSync(fd);
      }
      out.push({ file, path: target });
    }
    return out;
  }
}

// Where a secret file appears in the pod: an absolute path without "..", ":" or "," (docker's -v
// separator and the cell's list separator).
const SECRET_TARGET = /^(?!.*\/\.\.(\/|$))\/[^:,]{1,1023}$/;

export function parseEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const item of text.split(',')) {
    const s = item.trim();
    const i = s.indexOf('=');
    if (i > 0) env[s.slice(0, i)] = s.slice(i + 1);
  }
  return env;
}

export function parsePorts(text: string): PodSpec['ports'] {
  const out: PodSpec['ports'] = [];
  for (const item of text.split(',')) {
    const m = /^\s*(\d+):(\d+)(?:\/(tcp|udp))?\s*$/i.exec(item);
    if (m)
      out.push({
        host: Number(m[1]),
        container: Number(m[2]),
        proto: (m[3]?.toLowerCase() ?? 'tcp') as 'tcp' | 'udp',
      });
  }
  return out;
}

// docker-ps style "0.0.0.0:30000->80/tcp, …", the text the reference kubelet reports.
export function portsText(assigned: string): string {
  return parsePorts(String(assigned ?? ''))
    .map((p) => `0.0.0.0:${p.host}->${p.container}/${p.proto}`)
    .join(', ');
}

// Host ports of a Deployment (the NodePort analog, spec §3.5): parsing the `ports` cell, formatting
// the assigned mapping written to Pods.ports, and reading what a node agent really published.

export type Proto = 'tcp' | 'udp';

/** One entry of a Deployment's `ports` cell. host null = "pick a host port from the range". */
export interface PortSpec {
  host: number | null;
  container: number;
  proto: Proto;
}

/** A bound host port of one pod: `host:container/proto`. */
export interface AssignedPort {
  host: number;
  container: number;
  proto: Proto;
}

export const LIMITS = {
  minPort: 1, // TCP/UDP port numbers start at 1
  maxPort: 65535, // and end at 65535
  maxEntries: 64, // more mappings than this on one Deployment is a typo, not a design
} as const;

function parsePortNumber(text: string, what: string, whole: string): number {
  if (!/^\d+$/.test(text))
    throw new Error(`port ${JSON.stringify(whole)}: ${what} "${text}" is not an integer`);
  const n = Number(text);
  if (n < LIMITS.minPort || n > LIMITS.maxPort) {
    throw new Error(
      `port ${JSON.stringify(whole)}: ${what} ${n} is outside ${LIMITS.minPort}-${LIMITS.maxPort}`,
    );
  }
  return n;
}

/** Parses one `80`, `8080:80`, `8080:80/udp` or `53/udp`; throws an Error naming the problem. */
export function parsePortEntry(raw: string): PortSpec {
  const entry = raw.trim();
  let body = entry;
  let proto: Proto = 'tcp';
  const slash = entry.indexOf('/');
  if (slash >= 0) {
    const p = entry
      .slice(slash + 1)
      .trim()
      .toLowerCase();
    if (p !== 'tcp' && p !== 'udp')
      throw new Error(`port ${JSON.stringify(entry)}: protocol must be tcp or udp`);
    proto = p;
    body = entry.slice(0, slash).trim();
  }
  const parts = body.split(':');
  if (parts.length === 1)
    return { host: null, container: parsePortNumber(parts[0], 'container port', entry), proto };
  if (parts.length === 2) {
    return {
      host: parsePortNumber(parts[0], 'host port', entry),
      container: parsePortNumber(parts[1], 'container port', entry),
      proto,
    };
  }
  throw new Error(`port ${JSON.stringify(entry)}: use PORT, HOST:PORT or HOST:PORT/udp`);
}

/** Strict parse of a whole `ports` cell or list (used by apply). Empty → []. */
export function parsePorts(cell: unknown): PortSpec[] {
  if (cell === null || cell === undefined) return [];
  const items = Array.isArray(cell) ? cell.map((x) => String(x)) : String(cell).split(',');
  const out: PortSpec[] = [];
  for (const item of items) {
    if (item.trim() === '') continue;
    out.push(parsePortEntry(item));
  }
  if (out.length > LIMITS.maxEntries) throw new Error(`ports: at most ${LIMITS.maxEntries} entries`);
  return out;
}

/** Lenient parse used while scheduling: a garbage cell means "no ports" (spec §3.5). */
export function parsePortsLenient(cell: unknown): PortSpec[] {
  try {
    return parsePorts(cell);
  } catch {
    return [];
  }
}

/** Canonical text of a port spec list, as apply stores it (`8080:80,53/udp`). */
export function formatPortSpecs(specs: PortSpec[]): string {
  return specs
    .map((s) => {
      const base = s.host === null ? `${s.container}` : `${s.host}:${s.container}`;
      return s.proto === 'tcp' ? base : `${base}/${s.proto}`;
    })
    .join(',');
}

/** Pods.ports text: `30000:80/tcp,8080:80/udp`. */
export function formatAssigned(ports: AssignedPort[]): string {
  return ports.map((p) => `${p.host}:${p.container}/${p.proto}`).join(',');
}

/** Reads a Pods.ports cell back (garbage entries are dropped). */
export function parseAssigned(cell: unknown): AssignedPort[] {
  if (cell === null || cell === undefined) return [];
  const out: AssignedPort[] = [];
  for (const item of String(cell).split(',')) {
    const m = /^\s*(\d+):(\d+)\/(tcp|udp)\s*$/i.exec(item);
    if (!m) continue;
    const host = Number(m[1]);
    const container = Number(m[2]);
    if (host < 1 || host > 65535 || container < 1 || container > 65535) continue;
    out.push({ host, container, proto: m[3].toLowerCase() as Proto });
  }
  return out;
}

/** Parses NODEPORT_RANGE text `30000-32767`. */
export function parseRange(text: string): [number, number] {
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  if (!m) throw new Error(`port range ${JSON.stringify(text)}: use LOW-HIGH, e.g. 30000-32767`);
  const lo = Number(m[1]);
  const hi = Number(m[2]);
  if (lo < 1 || hi > 65535 || lo > hi) throw new Error(`port range ${text}: need 1 <= LOW <= HIGH <= 65535`);
  return [lo, hi];
}

/**
 * Endpoints a node really published, from docker's Ports text
 * (`0.0.0.0:30000->80/tcp, :::30000->80/tcp, 443/tcp`) or our agent's `host:container/proto` list.
 * IPv4/IPv6 duplicates collapse, exposed-only entries are ignored. Result `ip:host->container/proto`.
 */
export function endpointsFromReport(nodeIp: string, ports: unknown): string {
  if (ports === null || ports === undefined) return '';
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of String(ports).split(',')) {
    const item = raw.trim();
    let m = /:(\d+)->(\d+)\/(tcp|udp)$/i.exec(item);
    if (!m) m = /^(\d+):(\d+)\/(tcp|udp)$/i.exec(item);
    if (!m) continue;
    const ep = `${nodeIp}:${m[1]}->${m[2]}/${m[3].toLowerCase()}`;
    if (seen.has(ep)) continue;
    seen.add(ep);
    out.push(ep);
  }
  return out.join(',');
}

// KubeNet messages inside SCC frames: heartbeat (0x60), assignment (0x61) and spec (0x62),
// the cluster tag, the key and the MAC (kube-on-oberon spec §3.1–3.3) — and ours, refusal
// (0x63): the plane says what it refuses, in parts, and failed (0x64): a kubelet lists the pods it
// could not start. Pure functions.
import { halfSipHash } from './halfsiphash.ts';
import {
  DEFAULT_CHANNEL,
  decodeDatagram,
  decodeSccHeader,
  encodeDatagram,
  encodeSccPacket,
  LIMITS,
  type SccHeader,
  sccData,
  TYP,
} from './wire.ts';

/** Byte counts of the two KubeNet layouts (the fixed part around the variable list). */
const LAYOUT = {
  /** tag + 6 name + count + 2 counter + 4 MAC: heartbeat/assignment length is 14 + n. */
  NODE_FIXED: 14,
  /** tag + pod id + length + 2 counter + 4 MAC: spec length is 9 + n. */
  SPEC_FIXED: 9,
  /** tag + part + sum + length + 2 counter + 4 MAC: refusal length is 10 + n. */
  REFUSAL_FIXED: 10,
} as const;

export type NodeMessageTyp = typeof TYP.HEARTBEAT | typeof TYP.ASSIGN | typeof TYP.FAILED;

/**
 * Heartbeat (a node reports the ids it runs), assignment (the plane lists a node's ids) or, ours,
 * failed (a node lists the wanted ids it could not start).
 */
export interface NodeMessage {
  typ: NodeMessageTyp;
  cluster: number;
  /** Heartbeat and failed: the sender. Assignment: the node the list is for. */
  node: string;
  ids: number[];
  counter: number;
  mac: number;
}

/** Spec: the plane announces the image (an Oberon module name) of one pod id. */
export interface SpecMessage {
  typ: typeof TYP.SPEC;
  cluster: number;
  podId: number;
  image: string;
  counter: number;
  mac: number;
}

/**
 * Refusal: one part of the words the plane refuses with now (Kube.Refusal); `part` = index·16 +
 * count of parts, `sum` = the whole text's bytes MOD 256 (parts of different texts do not mix).
 */
export interface RefusalMessage {
  typ: typeof TYP.REFUSAL;
  cluster: number;
  index: number;
  parts: number;
  sum: number;
  text: string;
  counter: number;
  mac: number;
}

export type KubeMessage = NodeMessage | SpecMessage | RefusalMessage;

export type KubeDecode =
  | {
      ok: true;
      msg: KubeMessage /** the bytes the MAC covers: [typ] ‖ data before the MAC */;
      macInput: Uint8Array;
    }
  | { ok: false; reason: string };

/** The 1..255 tag that keeps clusters sharing one air apart: Σ (i+1)·code(cᵢ) MOD 255 + 1. */
export function clusterTag(name: string): number {
  let sum = 0;
  for (let i = 0; i < name.length; i++) sum = (sum + (i + 1) * (name.charCodeAt(i) & 0xff)) % 255;
  return sum + 1;
}

/** The tag tests use to forge "another cluster": (tag MOD 255) + 1. */
export function otherClusterTag(tag: number): number {
  return (tag % 255) + 1;
}

/** Checks a cluster name as `KubeNet.Serve` reads it: 1..8 printable characters. */
export function checkClusterName(name: string): void {
  if (name.length < 1 || name.length > LIMITS.CLUSTER_NAME_CHARS || !/^[\x21-\x7d]+$/.test(name)) {
    throw new Error(
      `cluster name "${name}" must be 1..${LIMITS.CLUSTER_NAME_CHARS} printable characters without spaces or "~"`,
    );
  }
}

/**
 * The 8-byte key from up to 16 hex digits, read in order (high nibble first) and padded on the
 * right with "0": `abc` → ab c0 00 00 00 00 00 00. Empty means the all-zero key.
 */
export function keyFromHex(hex: string): Uint8Array {
  if (hex.length > LIMITS.KEY_HEX_DIGITS) {
    throw new Error(`key has ${hex.length} hex digits; at most ${LIMITS.KEY_HEX_DIGITS} are allowed`);
  }
  if (!/^[0-9a-fA-F]*$/.test(hex)) {
    throw new Error(`key "${hex.replace(/./g, '*')}" has a character that is not a hex digit (0-9, a-f)`);
  }
  const padded = hex.padEnd(LIMITS.KEY_HEX_DIGITS, '0');
  return Uint8Array.from(Buffer.from(padded, 'hex'));
}

export const ZERO_KEY: Uint8Array = new Uint8Array(LIMITS.KEY_BYTES);

function checkNodeName(node: string): void {
  if (node.length < 1 || node.length > LIMITS.NODE_NAME_CHARS || !/^[\x21-\x7e]+$/.test(node)) {
    throw new Error(`node name "${node}" must be 1..${LIMITS.NODE_NAME_CHARS} printable ASCII characters`);
  }
}

function checkByte(what: string, v: number, lo: number, hi: number): void {
  if (!Number.isInteger(v) || v < lo || v > hi) throw new RangeError(`${what} ${v} is outside ${lo}..${hi}`);
}

function withMac(key: Uint8Array, typ: number, body: Uint8Array): Uint8Array {
  const input = new Uint8Array(body.length + 1);
  input[0] = typ;
  input.set(body, 1);
  const mac = halfSipHash(key, input);
  const out = new Uint8Array(body.length + LIMITS.MAC_BYTES);
  out.set(body);
  out[body.length] = mac & 0xff;
  out[body.length + 1] = (mac >>> 8) & 0xff;
  out[body.length + 2] = (mac >>> 16) & 0xff;
  out[body.length + 3] = mac >>> 24;
  return out;
}

/** Data bytes (14 + n) of a signed heartbeat or assignment. */
export function encodeNodeMessageData(
  typ: NodeMessageTyp,
  m: { cluster: number; node: string; ids: readonly number[]; counter: number },
  key: Uint8Array,
): Uint8Array {
  checkByte('cluster tag', m.cluster, 0, 255);
  checkNodeName(m.node);
  if (m.ids.length > LIMITS.PODS_PER_NODE) {
    throw new RangeError(`${m.ids.length} pod ids exceed the ${LIMITS.PODS_PER_NODE} a node message carries`);
  }
  for (const id of m.ids) checkByte('pod id', id, 1, LIMITS.MAX_POD_ID);
  checkByte('counter', m.counter, 0, LIMITS.COUNTER_MODULUS - 1);
  const n = m.ids.length;
  const body = new Uint8Array(10 + n);
  body[0] = m.cluster;
  for (let i = 0; i < m.node.length; i++) body[1 + i] = m.node.charCodeAt(i);
  body[7] = n;
  body.set(m.ids, 8);
  body[8 + n] = m.counter & 0xff;
  body[9 + n] = m.counter >>> 8;
  return withMac(key, typ, body);
}

/** Data bytes (9 + n) of a signed spec. */
export function encodeSpecData(
  m: { cluster: number; podId: number; image: string; counter: number },
  key: Uint8Array,
): Uint8Array {
  checkByte('cluster tag', m.cluster, 0, 255);
  checkByte('pod id', m.podId, 1, LIMITS.MAX_POD_ID);
  if (m.image.length > LIMITS.IMAGE_CHARS || !/^[\x20-\x7e]*$/.test(m.image)) {
    throw new Error(`image "${m.image}" must be at most ${LIMITS.IMAGE_CHARS} printable ASCII characters`);
  }
  checkByte('counter', m.counter, 0, LIMITS.COUNTER_MODULUS - 1);
  const n = m.image.length;
  const body = new Uint8Array(5 + n);
  body[0] = m.cluster;
  body[1] = m.podId;
  body[2] = n;
  for (let i = 0; i < n; i++) body[3 + i] = m.image.charCodeAt(i);
  body[3 + n] = m.counter & 0xff;
  body[4 + n] = m.counter >>> 8;
  return withMac(key, TYP.SPEC, body);
}

/** The byte sum (MOD 256) a refusal's parts carry, of the whole text. */
export function refusalSum(text: string): number {
  let sum = 0;
  for (let i = 0; i < text.length; i++) sum = (sum + (text.charCodeAt(i) & 0xff)) & 0xff;
  return sum;
}

/** Data bytes (10 + n) of each signed part of a refusal, as KubeNet.SendRefusal sends them. */
export function encodeRefusalData(
  m: { cluster: number; text: string; counter: number },
  key: Uint8Array,
): Uint8Array[] {
  checkByte('cluster tag', m.cluster, 0, 255);
  if (m.text.length < 1 || m.text.length > LIMITS.REFUSAL_CHARS || !/^[\x20-\x7e]*$/.test(m.text)) {
    throw new Error(`a refusal is 1..${LIMITS.REFUSAL_CHARS} printable ASCII characters`);
  }
  const per = LIMITS.REFUSAL_PART_CHARS;
  const parts = Math.ceil(m.text.length / per);
  const sum = refusalSum(m.text);
  const out: Uint8Array[] = [];
  for (let i = 0; i < parts; i++) {
    const piece = m.text.slice(i * per, (i + 1) * per);
    const n = piece.length;
    const counter = (m.counter + i) % LIMITS.COUNTER_MODULUS;
    const body = new Uint8Array(6 + n);
    body[0] = m.cluster;
    body[1] = i * 16 + parts;
    body[2] = sum;
    body[3] = n;
    for (let k = 0; k < n; k++) body[4 + k] = piece.charCodeAt(k);
    body[4 + n] = counter & 0xff;
    body[5 + n] = counter >>> 8;
    out.push(withMac(key, TYP.REFUSAL, body));
  }
  return out;
}

/** Text up to the first NUL, as Oberon compares strings; bytes are latin-1. */
function cString(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) {
    if (b === 0) break;
    s += String.fromCharCode(b);
  }
  return s;
}

const le16 = (b: Uint8Array, i: number): number => b[i] | (b[i + 1] << 8);
const le32 = (b: Uint8Array, i: number): number =>
  (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;

function macInputOf(typ: number, data: Uint8Array, macAt: number): Uint8Array {
  const input = new Uint8Array(macAt + 1);
  input[0] = typ;
  input.set(data.subarray(0, macAt), 1);
  return input;
}

/**
 * Decodes KubeNet data bytes (exactly `len` bytes, as a receiver reads them) with the checks a
 * machine makes before the MAC: length range and list length = len − fixed part.
 */
export function decodeKubeData(typ: number, data: Uint8Array): KubeDecode {
  const len = data.length;
  if (typ === TYP.HEARTBEAT || typ === TYP.ASSIGN || typ === TYP.FAILED) {
    if (len < LAYOUT.NODE_FIXED || len > LIMITS.DATA_BYTES) {
      return { ok: false, reason: `length ${len} outside ${LAYOUT.NODE_FIXED}..${LIMITS.DATA_BYTES}` };
    }
    const n = data[7];
    if (n !== len - LAYOUT.NODE_FIXED)
      return { ok: false, reason: `id count ${n} disagrees with length ${len}` };
    const macAt = 10 + n;
    return {
      ok: true,
      msg: {
        typ,
        cluster: data[0],
        node: cString(data.subarray(1, 7)),
        ids: Array.from(data.subarray(8, 8 + n)),
        counter: le16(data, 8 + n),
        mac: le32(data, macAt),
      },
      macInput: macInputOf(typ, data, macAt),
    };
  }
  if (typ === TYP.SPEC) {
    if (len < LAYOUT.SPEC_FIXED || len > LIMITS.DATA_BYTES) {
      return { ok: false, reason: `length ${len} outside ${LAYOUT.SPEC_FIXED}..${LIMITS.DATA_BYTES}` };
    }
    const n = data[2];
    if (n !== len - LAYOUT.SPEC_FIXED) {
      return { ok: false, reason: `image length ${n} disagrees with length ${len}` };
    }
    const macAt = 5 + n;
    return {
      ok: true,
      msg: {
        typ: TYP.SPEC,
        cluster: data[0],
        podId: data[1],
        image: cString(data.subarray(3, 3 + n)),
        counter: le16(data, 3 + n),
        mac: le32(data, macAt),
      },
      macInput: macInputOf(typ, data, macAt),
    };
  }
  if (typ === TYP.REFUSAL) {
    if (len < LAYOUT.REFUSAL_FIXED || len > LIMITS.DATA_BYTES) {
      return { ok: false, reason: `length ${len} outside ${LAYOUT.REFUSAL_FIXED}..${LIMITS.DATA_BYTES}` };
    }
    const n = data[3];
    if (n !== len - LAYOUT.REFUSAL_FIXED) {
      return { ok: false, reason: `text length ${n} disagrees with length ${len}` };
    }
    const index = data[1] >> 4;
    const parts = data[1] & 15;
    if (parts < 1 || index >= parts) return { ok: false, reason: `part ${index} of ${parts}` };
    const macAt = 6 + n;
    return {
      ok: true,
      msg: {
        typ: TYP.REFUSAL,
        cluster: data[0],
        index,
        parts,
        sum: data[2],
        text: cString(data.subarray(4, 4 + n)),
        counter: le16(data, 4 + n),
        mac: le32(data, macAt),
      },
      macInput: macInputOf(typ, data, macAt),
    };
  }
  return { ok: false, reason: `type 0x${typ.toString(16)} is not a KubeNet message` };
}

/** True when the message's MAC is HalfSipHash(key, [typ] ‖ data before the MAC). */
export function macValid(key: Uint8Array, decoded: { msg: KubeMessage; macInput: Uint8Array }): boolean {
  return halfSipHash(key, decoded.macInput) === decoded.msg.mac;
}

/** A decoded air frame: the radio channel, the SCC header, the data bytes and the KubeNet result. */
export interface KubeFrame {
  channel: number;
  header: SccHeader;
  /** min(len, 24) bytes after the header. */
  data: Uint8Array;
  kube: KubeDecode;
}

/** Decodes a 33-byte datagram; `null` when it is not a frame (a hello or a wrong size). */
export function decodeKubeFrame(datagram: Uint8Array): KubeFrame | null {
  const d = decodeDatagram(datagram);
  if (d.kind !== 'frame') return null;
  const header = decodeSccHeader(d.payload);
  const data = sccData(d.payload, header);
  const kube: KubeDecode =
    header.len > LIMITS.DATA_BYTES
      ? { ok: false, reason: `SCC length ${header.len} needs more than one frame` }
      : decodeKubeData(header.typ, data);
  return { channel: d.channel, header, data, kube };
}

/** Options of a station's frame: channel (default 5) and SCC sender address (default 1). */
export interface FrameOpts {
  channel?: number;
  sadr?: number;
}

/** A whole 33-byte datagram carrying KubeNet data bytes of type `typ`. */
export function kubeDatagram(typ: number, data: Uint8Array, opts: FrameOpts = {}): Uint8Array {
  const payload = encodeSccPacket({ typ, sadr: opts.sadr ?? 1 }, data);
  return encodeDatagram(opts.channel ?? DEFAULT_CHANNEL, payload);
}

export function heartbeatDatagram(
  m: { cluster: number; node: string; ids: readonly number[]; counter: number },
  key: Uint8Array,
  opts: FrameOpts = {},
): Uint8Array {
  return kubeDatagram(TYP.HEARTBEAT, encodeNodeMessageData(TYP.HEARTBEAT, m, key), opts);
}

export function assignDatagram(
  m: { cluster: number; node: string; ids: readonly number[]; counter: number },
  key: Uint8Array,
  opts: FrameOpts = {},
): Uint8Array {
  return kubeDatagram(TYP.ASSIGN, encodeNodeMessageData(TYP.ASSIGN, m, key), opts);
}

export function failedDatagram(
  m: { cluster: number; node: string; ids: readonly number[]; counter: number },
  key: Uint8Array,
  opts: FrameOpts = {},
): Uint8Array {
  return kubeDatagram(TYP.FAILED, encodeNodeMessageData(TYP.FAILED, m, key), opts);
}

export function specDatagram(
  m: { cluster: number; podId: number; image: string; counter: number },
  key: Uint8Array,
  opts: FrameOpts = {},
): Uint8Array {
  return kubeDatagram(TYP.SPEC, encodeSpecData(m, key), opts);
}

/** Every part of a refusal as whole datagrams (counters counter, counter + 1, ...). */
export function refusalDatagrams(
  m: { cluster: number; text: string; counter: number },
  key: Uint8Array,
  opts: FrameOpts = {},
): Uint8Array[] {
  return encodeRefusalData(m, key).map((d) => kubeDatagram(TYP.REFUSAL, d, opts));
}

/** Name of the message kind, as the reference listener prints it (refusal and failed: ours). */
export function kindName(typ: number): 'heartbeat' | 'assign' | 'spec' | 'refusal' | 'failed' | undefined {
  if (typ === TYP.HEARTBEAT) return 'heartbeat';
  if (typ === TYP.ASSIGN) return 'assign';
  if (typ === TYP.SPEC) return 'spec';
  if (typ === TYP.REFUSAL) return 'refusal';
  if (typ === TYP.FAILED) return 'failed';
  return undefined;
}

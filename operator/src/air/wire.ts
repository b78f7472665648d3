// The air's wire: UDP datagrams that carry nRF24L01+ radio frames, and the SCC packet header
// inside each frame. Pure functions over bytes; no sockets here. Byte-compatible with the
// reference system (kube-on-oberon spec §2.2–2.3, §10). Other modules (the RISC5 machine's
// radio device) import these constants, so names here are kept stable.

/** Protocol limits of the air and of KubeNet, each with the reason it has that value. */
export const LIMITS = {
  /** nRF24L01+ payload size: every radio frame is exactly this long. */
  FRAME_BYTES: 32,
  /** One channel byte (the radio's RF_CH) in front of the 32-byte payload. */
  DATAGRAM_BYTES: 33,
  /** A one-byte 0xFF datagram announces a station to the relay. */
  HELLO_BYTES: 1,
  /** The in-memory SCC `Header` record: valid, dadr, sadr, typ, len (LE32). */
  SCC_HEADER_BYTES: 8,
  /** 32 − 8: KubeNet never splits a message over frames (no collision avoidance on the air). */
  DATA_BYTES: 24,
  /** 24 = 1 tag + 6 name + 1 count + 10 ids + 2 counter + 4 MAC. */
  NODE_NAME_CHARS: 6,
  /** As many pod ids as fit in one heartbeat (the scheduler's capacity). */
  PODS_PER_NODE: 10,
  /** Pod ids are one byte; 0 is never used, so ids go 1..255 cyclically. */
  MAX_POD_ID: 255,
  /** Spec: 24 = 1 tag + 1 pod id + 1 length + 15 image + 2 counter + 4 MAC. */
  IMAGE_CHARS: 15,
  /** `KubeNet.Serve` reads the cluster name into a 9-byte buffer. */
  CLUSTER_NAME_CHARS: 8,
  /** HalfSipHash key: 64 bits = 16 hex digits. */
  KEY_HEX_DIGITS: 16,
  /** HalfSipHash key size in bytes. */
  KEY_BYTES: 8,
  /**
   * Ours: the words of a refusal the plane says on the air (Kube.SayLen − 1), in parts of 14
   * characters (24 = 1 tag + 1 part + 1 sum + 1 length + 14 text + 2 counter + 4 MAC): 5 parts.
   * Every message quoting the plane's refusal (the OberonKube's conditions) is bounded by this.
   */
  REFUSAL_CHARS: 70,
  REFUSAL_PART_CHARS: 14,
  /** 4 bytes of room for the MAC: HalfSipHash with 32-bit output. */
  MAC_BYTES: 4,
  /** 2 bytes of room for the counter; freshness uses serial-number arithmetic. */
  COUNTER_MODULUS: 65536,
  /** Serial-number window: a counter is newer when 0 < d < this. */
  COUNTER_WINDOW: 32768,
  /** Each KubeNet receiver tracks this many senders' counters. */
  FRESHNESS_PEERS: 32,
  /** A sender silent this long may have restarted: its counter is learned again; also node TTL. */
  TTL_MS: 5000,
  /**
   * Ours, not the reference's (#28.4): the plane's counter never goes back (a reservation on its
   * disk), so our kubelets learn it again only after this much silence, and an old genuine
   * assignment replayed while the plane is off or restarting is refused. No shorter than the time
   * the plane needs to send 32768 − 2·4096 frames (the serial window less two restarts' jumps) at
   * its most, 125 frames/s (KubeNet's TxGap): 180 s covers 22,500. KubeNet.Mod's PlaneTTL.
   */
  PLANE_TTL_MS: 180_000,
  /** Heartbeat and assignment period of KubeNet. */
  BEAT_MS: 1000,
  /** Stations send a hello this often so the relay learns them before they transmit. */
  HELLO_INTERVAL_MS: 5000,
  /** The relay forgets a peer after this much silence (12 missed hellos). */
  RELAY_PEER_TTL_MS: 60_000,
  /** SCC waits 50 ms before every send: at most ~20 frames/s per station. */
  STATION_MAX_FPS: 20,
} as const;

/** UDP port of the air (QEMU's chardev and the reference relay). */
export const AIR_PORT = 7524;
/** The hello datagram's only byte. */
export const HELLO_BYTE = 0xff;
/** SCC.Start sets RF_CH = (switches DIV 4 MOD 16)·10 + 5; machines report switches 0 → channel 5. */
export const DEFAULT_CHANNEL = 5;
/** SCC broadcast destination address; KubeNet always sends to it. */
export const BROADCAST = 0xff;

/** KubeNet message types (the SCC `typ` byte). */
export const TYP = {
  HEARTBEAT: 0x60,
  ASSIGN: 0x61,
  SPEC: 0x62,
  /** Ours: the plane says what it refuses (Kube.Refusal), a part of the words per frame. */
  REFUSAL: 0x63,
  /** Ours: a kubelet lists the wanted pod ids it could not start (the heartbeat's layout). */
  FAILED: 0x64,
} as const;

/** A datagram as the relay and stations see it. */
export type Datagram =
  | { kind: 'hello' }
  | { kind: 'frame'; channel: number; payload: Uint8Array }
  | { kind: 'malformed'; size: number };

/** The 8-byte SCC header at the start of a radio payload. */
export interface SccHeader {
  valid: number;
  dadr: number;
  sadr: number;
  typ: number;
  /** Length of the data after the header (may claim more than one frame carries). */
  len: number;
}

/** The one-byte hello a station sends to register with the relay. */
export function helloDatagram(): Uint8Array {
  return Uint8Array.of(HELLO_BYTE);
}

export function isHello(buf: Uint8Array): boolean {
  return buf.length === LIMITS.HELLO_BYTES && buf[0] === HELLO_BYTE;
}

export function isFrameDatagram(buf: Uint8Array): boolean {
  return buf.length === LIMITS.DATAGRAM_BYTES;
}

/** Classifies a received datagram. Never throws. */
export function decodeDatagram(buf: Uint8Array): Datagram {
  if (isHello(buf)) return { kind: 'hello' };
  if (isFrameDatagram(buf)) return { kind: 'frame', channel: buf[0], payload: buf.subarray(1) };
  return { kind: 'malformed', size: buf.length };
}

/** Builds a 33-byte datagram from a channel byte and a payload of at most 32 bytes (zero-filled). */
export function encodeDatagram(channel: number, payload: Uint8Array): Uint8Array {
  if (!Number.isInteger(channel) || channel < 0 || channel > 255) {
    throw new RangeError(`channel ${channel} is not a byte (0..255)`);
  }
  if (payload.length > LIMITS.FRAME_BYTES) {
    throw new RangeError(`payload of ${payload.length} bytes exceeds the ${LIMITS.FRAME_BYTES}-byte frame`);
  }
  const out = new Uint8Array(LIMITS.DATAGRAM_BYTES);
  out[0] = channel;
  out.set(payload, 1);
  return out;
}

/** Reads the SCC header from a payload of at least 8 bytes. */
export function decodeSccHeader(payload: Uint8Array): SccHeader {
  if (payload.length < LIMITS.SCC_HEADER_BYTES) {
    throw new RangeError(`an SCC header needs ${LIMITS.SCC_HEADER_BYTES} bytes, got ${payload.length}`);
  }
  const len = (payload[4] | (payload[5] << 8) | (payload[6] << 16) | (payload[7] << 24)) >>> 0;
  return { valid: payload[0], dadr: payload[1], sadr: payload[2], typ: payload[3], len };
}

/** Writes an SCC header into the first 8 bytes of `out`. */
export function writeSccHeader(out: Uint8Array, h: SccHeader): void {
  out[0] = h.valid & 0xff;
  out[1] = h.dadr & 0xff;
  out[2] = h.sadr & 0xff;
  out[3] = h.typ & 0xff;
  const len = h.len >>> 0;
  out[4] = len & 0xff;
  out[5] = (len >>> 8) & 0xff;
  out[6] = (len >>> 16) & 0xff;
  out[7] = (len >>> 24) & 0xff;
}

/**
 * A one-frame SCC packet: header plus at most 24 data bytes, zero-filled to 32 bytes.
 * `len` defaults to the data length.
 */
export function encodeSccPacket(
  h: { typ: number; sadr: number; dadr?: number; valid?: number; len?: number },
  data: Uint8Array,
): Uint8Array {
  if (data.length > LIMITS.DATA_BYTES) {
    throw new RangeError(`${data.length} data bytes exceed the ${LIMITS.DATA_BYTES} a frame carries`);
  }
  const out = new Uint8Array(LIMITS.FRAME_BYTES);
  writeSccHeader(out, {
    valid: h.valid ?? 1,
    dadr: h.dadr ?? BROADCAST,
    sadr: h.sadr,
    typ: h.typ,
    len: h.len ?? data.length,
  });
  out.set(data, LIMITS.SCC_HEADER_BYTES);
  return out;
}

/** The data bytes a one-frame packet carries: min(len, 24) bytes after the header. */
export function sccData(payload: Uint8Array, h: SccHeader): Uint8Array {
  const n = Math.min(h.len, LIMITS.DATA_BYTES, Math.max(0, payload.length - LIMITS.SCC_HEADER_BYTES));
  return payload.subarray(LIMITS.SCC_HEADER_BYTES, LIMITS.SCC_HEADER_BYTES + n);
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** Strict hex → bytes (even number of hex digits, whitespace ignored). */
export function fromHex(hex: string): Uint8Array {
  const clean = hex.replace(/\s+/g, '');
  if (clean.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(clean)) {
    throw new Error(`"${hex}" is not an even number of hex digits`);
  }
  return Uint8Array.from(Buffer.from(clean, 'hex'));
}

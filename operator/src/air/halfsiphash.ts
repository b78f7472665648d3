// HalfSipHash-2-4 with a 32-bit result, the MAC of KubeNet (kube-on-oberon spec §3.3).
// All arithmetic is on unsigned 32-bit words, as on the RISC5 machine.

const rotl = (x: number, b: number): number => ((x << b) | (x >>> (32 - b))) >>> 0;

/** Reads a little-endian 32-bit word. */
function le32(b: Uint8Array, i: number): number {
  return (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
}

/**
 * HalfSipHash-2-4 of `message` under an 8-byte key, as an unsigned 32-bit number.
 * The bytes on the wire are this number little-endian (see `halfSipHashBytes`).
 */
export function halfSipHash(key: Uint8Array, message: Uint8Array): number {
  if (key.length !== 8) throw new RangeError(`HalfSipHash needs an 8-byte key, got ${key.length}`);
  const k0 = le32(key, 0);
  const k1 = le32(key, 4);
  let v0 = k0;
  let v1 = k1;
  let v2 = (k0 ^ 0x6c796765) >>> 0;
  let v3 = (k1 ^ 0x74656462) >>> 0;

  const round = (): void => {
    v0 = (v0 + v1) >>> 0;
    v1 = rotl(v1, 5);
    v1 = (v1 ^ v0) >>> 0;
    v0 = rotl(v0, 16);
    v2 = (v2 + v3) >>> 0;
    v3 = rotl(v3, 8);
    v3 = (v3 ^ v2) >>> 0;
    v0 = (v0 + v3) >>> 0;
    v3 = rotl(v3, 7);
    v3 = (v3 ^ v0) >>> 0;
    v2 = (v2 + v1) >>> 0;
    v1 = rotl(v1, 13);
    v1 = (v1 ^ v2) >>> 0;
    v2 = rotl(v2, 16);
  };
  const compress = (m: number): void => {
    v3 = (v3 ^ m) >>> 0;
    round();
    round();
    v0 = (v0 ^ m) >>> 0;
  };

  const len = message.length;
  const full = len - (len % 4);
  for (let i = 0; i < full; i += 4) compress(le32(message, i));
  let b = ((len & 0xff) << 24) >>> 0;
  for (let i = full, shift = 0; i < len; i++, shift += 8) b = (b | (message[i] << shift)) >>> 0;
  compress(b);

  v2 = (v2 ^ 0xff) >>> 0;
  for (let i = 0; i < 4; i++) round();
  return (v1 ^ v3) >>> 0;
}

/** The MAC as the 4 bytes that travel on the air (little-endian). */
export function halfSipHashBytes(key: Uint8Array, message: Uint8Array): Uint8Array {
  const h = halfSipHash(key, message);
  return Uint8Array.of(h & 0xff, (h >>> 8) & 0xff, (h >>> 16) & 0xff, h >>> 24);
}

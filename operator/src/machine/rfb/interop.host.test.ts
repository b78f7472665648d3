// A real VNC client (vncsnapshot, TightVNC-based, a Debian package that npm test's set-up installs)
// against our server: it negotiates its own pixel format and encodings and saves a JPEG.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { desEncryptBlock } from './des.ts';
import { type RfbServer, startRfbServer } from './server.ts';

const run = promisify(execFile);

/** Width and height from a JPEG's SOF marker. */
function jpegSize(b: Buffer): { width: number; height: number } {
  let i = 2;
  while (i < b.length) {
    const marker = b[i + 1];
    const len = b.readUInt16BE(i + 2);
    if (marker >= 0xc0 && marker <= 0xc3)
      return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    i += 2 + len;
  }
  throw new Error('no SOF marker in the JPEG');
}

describe('RFB interoperability', () => {
  it('vncsnapshot connects, negotiates and saves the screen at its size', async () => {
    const words = new Uint32Array((256 / 32) * 96);
    for (let y = 0; y < 96; y++) words[y * 8] = 0xffffffff;
    const screen = { snapshot: () => ({ width: 256, height: 96, words, version: 1 }) };
    const keys: number[][] = [];
    let server: RfbServer | undefined;
    let display = 0;
    // vncsnapshot takes a display number (port 5900 + n): find a free one
    for (display = 60; display < 100 && !server; display++) {
      server = await startRfbServer({
        screen,
        input: { ps2: (k) => keys.push([...k]), mouse() {} },
        port: 5900 + display,
      }).catch(() => undefined);
    }
    if (!server) throw new Error('no free port in 5960..5999 for the vncsnapshot test');
    try {
      const out = join(await mkdtemp(join(tmpdir(), 'rk-vnc-')), 'shot.jpg');
      await run('vncsnapshot', ['-quiet', `127.0.0.1:${server.port - 5900}`, out], { timeout: 20_000 });
      expect(jpegSize(await readFile(out))).toEqual({ width: 256, height: 96 });
    } finally {
      await server.close();
    }
  });

  it('#17.4 vncsnapshot with a vncpasswd file passes VNC Authentication; with a wrong one it is refused', async () => {
    const words = new Uint32Array((256 / 32) * 96);
    const screen = { snapshot: () => ({ width: 256, height: 96, words, version: 1 }) };
    let server: RfbServer | undefined;
    for (let display = 60; display < 100 && !server; display++) {
      server = await startRfbServer({
        screen,
        input: { ps2() {}, mouse() {} },
        port: 5900 + display,
        password: 'opensesa',
      }).catch(() => undefined);
    }
    if (!server) throw new Error('no free port in 5960..5999 for the vncsnapshot test');
    const dir = await mkdtemp(join(tmpdir(), 'rk-vnc-'));
    // The vncpasswd file format: the password (8 bytes, zero padded) DES-encrypted with VNC's fixed
    // key, whose bytes (like every VNC DES key) are used bit-reversed.
    const passwdFile = async (name: string, password: string): Promise<string> => {
      const fixed = Buffer.from([23, 82, 107, 6, 35, 78, 88, 7]).map((b) => {
        let y = 0;
        for (let i = 0; i < 8; i++) y |= ((b >> i) & 1) << (7 - i);
        return y;
      });
      const plain = Buffer.alloc(8);
      Buffer.from(password, 'latin1').copy(plain);
      const f = join(dir, name);
      await writeFile(f, desEncryptBlock(fixed, plain));
      return f;
    };
    try {
      const target = `127.0.0.1:${server.port - 5900}`;
      const out = join(dir, 'shot.jpg');
      await run('vncsnapshot', ['-quiet', '-passwd', await passwdFile('good', 'opensesa'), target, out], {
        timeout: 20_000,
      });
      expect(jpegSize(await readFile(out))).toEqual({ width: 256, height: 96 });
      await expect(
        run(
          'vncsnapshot',
          ['-quiet', '-passwd', await passwdFile('bad', 'guessing'), target, join(dir, 'no.jpg')],
          {
            timeout: 20_000,
          },
        ),
      ).rejects.toThrow();
    } finally {
      await server.close();
    }
  });
});

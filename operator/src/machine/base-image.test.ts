import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_IMAGE, findBaseImage } from './base-image.ts';

async function serve(body: Buffer): Promise<{ server: Server; url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    if (req.url === '/missing') {
      res.writeHead(404).end('not here');
      return;
    }
    res.writeHead(200, { 'content-length': body.length });
    // in two halves so progress is reported more than once
    res.write(body.subarray(0, body.length >> 1));
    setTimeout(() => res.end(body.subarray(body.length >> 1)), 10);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { server, url: `http://127.0.0.1:${port}/Oberon-2020-08-18.dsk`, hits: () => hits };
}

describe('base image provisioning', () => {
  let image: Buffer;
  let srv: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    const found = await findBaseImage({ download: false });
    image = await readFile(found.path);
    srv = await serve(image);
  });
  afterAll(() => new Promise<void>((r) => srv.server.close(() => r())));

  it('finds the image in the CI shared folder beside the repository and checks its hash', async () => {
    const found = await findBaseImage({
      download: false,
      env: {},
      cacheDir: await mkdtemp(join(tmpdir(), 'rk-cache-')),
    });
    expect(found.source).toBe('shared');
    expect(found.sha256).toBe(BASE_IMAGE.sha256);
  });

  it('prefers $RETROKUBE_OBERON_BASE and rejects it when it is not the right image', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rk-env-'));
    const good = join(dir, 'good.dsk');
    await writeFile(good, image);
    expect(await findBaseImage({ env: { RETROKUBE_OBERON_BASE: good } })).toMatchObject({
      path: good,
      source: 'env',
    });
    const bad = join(dir, 'bad.dsk');
    await writeFile(bad, Buffer.from('not a disk'));
    await expect(findBaseImage({ env: { RETROKUBE_OBERON_BASE: bad } })).rejects.toThrow(
      /sha256 .* expected 441a2bd2/,
    );
    await expect(findBaseImage({ env: { RETROKUBE_OBERON_BASE: join(dir, 'none') } })).rejects.toThrow(
      /is not a file/,
    );
  });

  it('downloads into the cache with progress, verifies the sha256, then finds it in the cache without the network', async () => {
    const cacheDir = join(await mkdtemp(join(tmpdir(), 'rk-dl-')), 'retrokube');
    const progress: number[] = [];
    const before = srv.hits();
    const found = await findBaseImage({
      env: {},
      cacheDir,
      sharedDirs: [],
      url: srv.url,
      onProgress: (n) => progress.push(n),
    });
    expect(found).toMatchObject({ source: 'download', path: join(cacheDir, BASE_IMAGE.fileName) });
    expect(
      createHash('sha256')
        .update(await readFile(found.path))
        .digest('hex'),
    ).toBe(BASE_IMAGE.sha256);
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toBe(image.length);
    expect(srv.hits() - before).toBe(1);
    const again = await findBaseImage({ env: {}, cacheDir, sharedDirs: [], url: srv.url });
    expect(again.source).toBe('cache');
    expect(srv.hits() - before).toBe(1);
  });

  it('downloads from $RETROKUBE_OBERON_BASE_URL (a build with a local server) and still checks the sha256', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'rk-url-'));
    const before = srv.hits();
    const found = await findBaseImage({
      env: { RETROKUBE_OBERON_BASE_URL: srv.url },
      cacheDir,
      sharedDirs: [],
    });
    expect(found).toMatchObject({ source: 'download', sha256: BASE_IMAGE.sha256 });
    expect(srv.hits() - before).toBe(1);
    await expect(
      findBaseImage({
        env: { RETROKUBE_OBERON_BASE_URL: srv.url },
        cacheDir: await mkdtemp(join(tmpdir(), 'rk-url-bad-')),
        sharedDirs: [],
        sha256: '0'.repeat(64),
      }),
    ).rejects.toThrow(/expected 0000/);
  });

  it('refuses a download with the wrong hash and leaves nothing in the cache', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'rk-bad-'));
    await expect(
      findBaseImage({ env: {}, cacheDir, sharedDirs: [], url: srv.url, sha256: '0'.repeat(64) }),
    ).rejects.toThrow(/downloaded file has sha256 441a2bd2.*expected 0000/);
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('explains what to do when there is neither a local copy nor a working download', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'rk-none-'));
    await expect(findBaseImage({ env: {}, cacheDir, sharedDirs: [], download: false })).rejects.toThrow(
      /no Oberon base image found .*RETROKUBE_OBERON_BASE/,
    );
    await expect(
      findBaseImage({ env: {}, cacheDir, sharedDirs: [], url: srv.url.replace(/\/[^/]*$/, '/missing') }),
    ).rejects.toThrow(/download from .* failed: HTTP 404.*Set RETROKUBE_OBERON_BASE/);
  });
});

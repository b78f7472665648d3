// CLI verbs of the node side: `retrokube sheets node` (the node agent) and
// `retrokube sheets image import|export|ls|rm` (SICF images in cells).

import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { SheetsClient } from '../ctl/client.ts';
import { sheetsGroup } from '../ctl/verbs.ts';
import { DEFAULT_TOKEN } from '../default-token.ts';
import {
  digestOf,
  FILE_MEDIA_TYPE,
  type ImageConfig,
  importImage,
  isWasm,
  listImages,
  pullImage,
  removeImage,
  WASM_MEDIA_TYPE,
  wasmConfig,
} from '../images/sicf.ts';
import { WELL_KNOWN_WITH_COMMANDS } from '../local/credentials.ts';
import { tokenAndKey } from '../secret-flags.ts';
import type { Row, Store } from '../store/types.ts';
import type { RuntimeName } from './agent.ts';
import { PROCESS_OPT_IN } from './runtimes/process.ts';

const RUNTIMES: RuntimeName[] = ['wasm', 'process', 'docker'];

function int(flag: string, min: number, max: number) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new Error(`${flag} "${v}" must be a whole number`);
    const n = Number(v);
    if (n < min || n > max) throw new Error(`${flag} ${n} must be between ${min} and ${max}`);
    return n;
  };
}

function runtimes(v: string): RuntimeName[] {
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const r of list) {
    if (!RUNTIMES.includes(r as RuntimeName))
      throw new Error(`--runtime ${r}: choose from ${RUNTIMES.join(', ')}`);
  }
  if (list.length === 0) throw new Error('--runtime needs at least one runtime (wasm, process, docker)');
  return list as RuntimeName[];
}

export function registerSheetsNodeVerbs(program: Command): void {
  const sheets = sheetsGroup(program);
  registerNode(sheets);
  registerImage(sheets);
  registerEmulator(sheets);
}

function registerEmulator(sheets: Command): void {
  sheets
    .command('google-emulator')
    .description(
      'run the local Google Sheets v4 emulator (quotas and limits like Google; data in memory only)',
    )
    .option('--port <n>', 'listen port (0 = any free port)', int('--port', 0, 65535), 8788)
    .option(
      '--host <addr>',
      'listen address; the emulator believes any token, so name another address only for a test cluster',
      '127.0.0.1',
    )
    .option('--title <title>', 'title of the spreadsheet created at start', 'cluster')
    .option('--spreadsheet-id <id>', 'the id of the spreadsheet created at start (default: a random one)')
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets google-emulator --port 8788\n  retrokube sheets serve --workbook google:<id> --google-root-url http://127.0.0.1:8788/ --google-credentials creds.json\n',
    )
    .action(async (o: { port: number; host: string; title: string; spreadsheetId?: string }) => {
      const { SheetsEmulator } = await import('../google-emulator/server.ts');
      const emu = new SheetsEmulator();
      const id = emu.createSpreadsheet(o.title, ['Sheet1'], o.spreadsheetId);
      const url = await emu.listen(o.port, o.host);
      if (!['127.0.0.1', '::1', 'localhost'].includes(o.host))
        process.stderr.write(
          `warning: the emulator believes any token and listens on ${o.host}: test clusters only\n`,
        );
      process.stdout.write(
        `Sheets API emulator at ${url}\nspreadsheet id: ${id}  (workbook: google:${id})\n`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await emu.close();
    });
}

function registerNode(sheets: Command): void {
  sheets
    .command('node')
    .description('run a node agent (our kubelet): heartbeat to the apiserver and run the pods it orders')
    .option('--server <url>', 'apiserver URL (env WEBAPP_URL)', process.env.WEBAPP_URL)
    .option('--name <node>', 'node name (env NODE_NAME)', process.env.NODE_NAME ?? os.hostname())
    .option('--token <t>', 'shared token; prefer env TOKEN or --token-file (argv shows in ps)')
    .option('--token-file <file>', 'read the shared token from the first line of FILE')
    .option('--key <k>', 'HMAC signing key: sign every heartbeat; prefer env SIGNING_KEY or --key-file')
    .option('--key-file <file>', 'read the HMAC signing key from the first line of FILE')
    .option(
      '--runtime <list>',
      'runtimes to offer, comma-separated: wasm,docker (process needs --allow-process)',
      runtimes,
      ['wasm', 'docker'] as RuntimeName[],
    )
    .option(
      '--allow-process',
      'also offer the process runtime: the command of any deployment with image "process" runs via /bin/sh as this user',
    )
    .option(
      '--interval <s>',
      'seconds between heartbeats (env INTERVAL)',
      int('--interval', 1, 3600),
      Number(process.env.INTERVAL ?? 10),
    )
    .option('--ip <addr>', 'address reported for this node (env NODE_IP)', process.env.NODE_IP)
    .option(
      '--cpu <millicores>',
      'CPU offered (env CPU_TOTAL; default cores x 1000)',
      int('--cpu', 1, 100_000_000),
      process.env.CPU_TOTAL ? Number(process.env.CPU_TOTAL) : undefined,
    )
    .option(
      '--mem <MiB>',
      'memory offered (env MEM_TOTAL; default all RAM)',
      int('--mem', 1, 100_000_000),
      process.env.MEM_TOTAL ? Number(process.env.MEM_TOTAL) : undefined,
    )
    .option('--work-dir <dir>', 'where pod logs and secret files go (default: a temp dir per node)')
    .option(
      '--network <name>',
      'Docker network of the docker runtime (env SK_NET)',
      process.env.SK_NET ?? 'sheeternetes',
    )
    .option(
      '--docker-host <url>',
      'Docker daemon of the docker runtime, e.g. unix:///run/docker.sock (env DOCKER_HOST)',
    )
    .option(
      '--publish-addr <ip>',
      'host address docker publishes pod ports on, e.g. 127.0.0.1 (env SK_PUBLISH_ADDR; default all)',
      process.env.SK_PUBLISH_ADDR || undefined,
    )
    .addHelpText(
      'after',
      '\nExample:\n  TOKEN=s3cret retrokube sheets node --server http://127.0.0.1:8787 --name node-a --allow-process\n\nA failed heartbeat never stops running pods; crashed pods restart with backoff. SIGTERM stops the pods and exits.\n',
    )
    .action(async (o) => {
      if (!o.server)
        throw new Error('--server is required (or set WEBAPP_URL), e.g. --server http://127.0.0.1:8787');
      const warn = (s: string) => process.stderr.write(`[node] ${s}`);
      const { token, key } = tokenAndKey(o, warn);
      const list: RuntimeName[] = o.runtime;
      if (list.includes('process') && !o.allowProcess)
        throw new Error(`--runtime process: ${PROCESS_OPT_IN}`);
      if (o.allowProcess && !list.includes('process')) list.push('process');
      if (list.includes('process') && token === DEFAULT_TOKEN) throw new Error(WELL_KNOWN_WITH_COMMANDS);
      if (!/^https?:\/\//.test(o.server))
        throw new Error(`--server ${o.server}: must be an http:// or https:// URL`);
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(o.name))
        throw new Error(`--name ${o.name}: use letters, digits, '.', '_' or '-'`);
      const { NodeAgent } = await import('./agent.ts'); // loaded only when the verb runs
      const agent = new NodeAgent({
        server: o.server,
        token,
        key,
        name: o.name,
        ip: o.ip,
        cpuTotal: o.cpu,
        memTotal: o.mem,
        intervalMs: o.interval * 1000,
        runtimes: list,
        allowProcess: Boolean(o.allowProcess),
        workDir: o.workDir,
        dockerNetwork: o.network,
        dockerHost: o.dockerHost,
        publishAddr: o.publishAddr,
      });
      process.stderr.write(
        `[node] node=${o.name} runtimes=${agent.enabledRuntimes().join(',') || 'none'} -> ${o.server}${key ? ' (signed)' : ''}\n`,
      );
      if (agent.enabledRuntimes().includes('process'))
        warn(
          `WARNING: the process runtime is ON (--allow-process): anyone who can write a deployment with image "process" to this cluster runs commands as ${os.userInfo().username} on this host\n`,
        );
      if (token === DEFAULT_TOKEN)
        warn('WARNING: using the well-known default token; set TOKEN or --token-file\n');
      agent.start();
      await new Promise<void>((resolve) => {
        const bye = () => {
          process.stderr.write('[node] stopping pods\n');
          void agent.stop(true).then(resolve);
        };
        process.once('SIGTERM', bye);
        process.once('SIGINT', bye);
      });
    });
}

interface SourceOpts {
  workbook?: string;
  server?: string;
  token: string;
  googleCredentials?: string;
  googleRootUrl?: string;
}

function sourceOptions(c: Command): Command {
  return c
    .option('--workbook <file>', 'work on a store directly: a .xlsx file, memory:, or google:<spreadsheetId>')
    .option('--server <url>', 'read through an apiserver instead (read-only: ls and export)')
    .option('--token <t>', 'apiserver token (env TOKEN)', process.env.TOKEN ?? 'CHANGE_ME_super_secret')
    .option('--google-credentials <file>', 'credentials JSON for a google: workbook')
    .option('--google-root-url <url>', 'Sheets API root URL (an emulator)');
}

async function openWorkbook(spec: string, o: SourceOpts): Promise<Store> {
  const { openWorkbook: open } = await import('../apiserver/open.ts'); // googleapis loads only when used
  return open(spec, { googleCredentials: o.googleCredentials, googleRootUrl: o.googleRootUrl });
}

async function withStore<T>(o: SourceOpts, fn: (s: Store) => Promise<T>): Promise<T> {
  if (!o.workbook)
    throw new Error('--workbook FILE is required to change images (the apiserver has no image upload verb)');
  const store = await openWorkbook(o.workbook, o);
  try {
    if (!store.tabs().includes('Images') || !store.tabs().includes('Layers')) {
      const { setupCluster } = await import('../store/setup.ts');
      await setupCluster(store, { samples: false });
    }
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function readRows(o: SourceOpts): Promise<{ images: Row[]; layers: Row[] }> {
  if (o.server) {
    const c = new SheetsClient({ url: o.server, token: o.token });
    const [images, layers] = await Promise.all([c.get('images'), c.get('layers')]);
    return { images: images as Row[], layers: layers as Row[] };
  }
  if (!o.workbook) throw new Error('say where the images are: --workbook FILE or --server URL');
  const store = await openWorkbook(o.workbook, o);
  try {
    const has = (t: string) => store.tabs().includes(t);
    return {
      images: has('Images') ? store.rows('Images') : [],
      layers: has('Layers') ? store.rows('Layers') : [],
    };
  } finally {
    await store.close();
  }
}

function registerImage(sheets: Command): void {
  const image = sheets
    .command('image')
    .description('images in cells (SICF): import, export, list and remove');

  sourceOptions(
    image
      .command('import <file>')
      .description('store a file or a WASM module in the Images/Layers tabs (chunked base64, sha256 digests)')
      .requiredOption('--name <name:tag>', 'image name, e.g. hello-wasm:v1')
      .option('--args <words>', 'wasm: default arguments after the module name', '')
      .option('-o, --output <fmt>', 'json for machines'),
  )
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets image import hello.wasm --name hello-wasm:v1 --workbook cluster.xlsx\n',
    )
    .action(async (file: string, o: SourceOpts & { name: string; args: string; output?: string }) => {
      const bytes = await readFile(file).catch((e: Error) => {
        throw new Error(`cannot read ${file}: ${e.message}`);
      });
      const wasm = isWasm(bytes);
      const config: ImageConfig = wasm
        ? wasmConfig(digestOf(bytes), o.args.split(/\s+/).filter(Boolean))
        : {
            architecture: 'none',
            os: 'none',
            config: { Entrypoint: [path.basename(file)] },
            rootfs: { type: 'layers', diff_ids: [digestOf(bytes)] },
          };
      const r = await withStore(o, (s) =>
        importImage(s, o.name, [{ bytes, mediaType: wasm ? WASM_MEDIA_TYPE : FILE_MEDIA_TYPE }], config),
      );
      if (o.output === 'json') process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      else {
        const l = r.layers[0];
        process.stdout.write(
          `imported ${r.name} (${wasm ? 'wasm module' : 'file'}, ${r.size} bytes) digest ${r.digest}\n` +
            `  layer ${l.digest} ${l.reused ? 'already stored (deduplicated)' : `${l.chunks} chunk(s)`}\n` +
            `run it: a Deployment with image sicf:${r.name}\n`,
        );
      }
    });

  sourceOptions(
    image
      .command('export <name>')
      .description("write an image's content back to a file, after verifying every digest")
      .requiredOption('--out <file>', 'output file (multi-layer images: <file>.<n> per layer)'),
  )
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets image export hello-wasm:v1 --out hello.wasm --workbook cluster.xlsx\n',
    )
    .action(async (name: string, o: SourceOpts & { out: string }) => {
      const img = pullImage(await readRows(o), name);
      if (img.layers.length === 1) await writeFile(o.out, img.layers[0].bytes);
      else for (const [i, l] of img.layers.entries()) await writeFile(`${o.out}.${i}`, l.bytes);
      const size = img.layers.reduce((n, l) => n + l.bytes.length, 0);
      process.stdout.write(
        `exported ${img.name}: ${img.layers.length} layer(s), ${size} bytes, sha256 OK -> ${o.out}\n`,
      );
    });

  sourceOptions(
    image
      .command('ls')
      .description('list the images in the store')
      .option('-o, --output <fmt>', 'json for machines'),
  )
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets image ls --workbook cluster.xlsx\n  retrokube sheets image ls --server http://127.0.0.1:8787 -o json\n',
    )
    .action(async (o: SourceOpts & { output?: string }) => {
      const list = listImages((await readRows(o)).images);
      if (o.output === 'json') {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        return;
      }
      const rows = [
        ['NAME', 'DIGEST', 'SIZE', 'LAYERS', 'CREATED'],
        ...list.map((i) => [i.name, i.digest.slice(0, 19), String(i.size), String(i.layers), i.created]),
      ];
      const w = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
      process.stdout.write(
        `${rows
          .map((r) =>
            r
              .map((x, c) => x.padEnd(w[c]))
              .join('  ')
              .trimEnd(),
          )
          .join('\n')}\n`,
      );
    });

  sourceOptions(image.command('rm <name>').description('remove an image and the layers no other image uses'))
    .addHelpText('after', '\nExample:\n  retrokube sheets image rm hello-wasm:v1 --workbook cluster.xlsx\n')
    .action(async (name: string, o: SourceOpts) => {
      const r = await withStore(o, (s) => removeImage(s, name));
      if (!r.removed) throw new Error(`no image named ${name}`);
      process.stdout.write(`removed ${name} (${r.layersRemoved} layer chunk(s) freed)\n`);
    });
}

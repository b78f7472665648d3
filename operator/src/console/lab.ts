// `retrokube lab`: serves the browser lab (the page, its machine worker and the Kube disk) on
// loopback, or writes it to a folder for any static host. After loading, the page needs nothing
// from the server: the machines, the air and the labs all run in the browser.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { buildKubeDisk } from '../machine/kube-disk.ts';
import { checkRequest, isLoopbackAddress } from '../util/http-guard.ts';
import { type PageFiles, pageFiles, writePage } from './bundle.ts';

export const LIMITS = {
  // The page compiles RISC5 code to WebAssembly in its workers, hence 'wasm-unsafe-eval'.
  csp: "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; style-src 'self' 'unsafe-inline'",
} as const;

export interface LabServer {
  url: string;
  files: PageFiles;
  close(): Promise<void>;
}

export async function labFiles(): Promise<PageFiles> {
  const disk = await buildKubeDisk();
  return pageFiles('lab', disk.path);
}

export async function serveLab(port = 0, host = '127.0.0.1'): Promise<LabServer> {
  if (!isLoopbackAddress(host))
    throw new Error(
      `retrokube lab serves loopback only (asked for ${host}); use --out for a public web server`,
    );
  const files = await labFiles();
  const server = http.createServer((req, res) => {
    const g = checkRequest(req);
    if (!g.ok) {
      res.writeHead(g.status, { 'content-type': 'text/plain' });
      res.end(`${g.error}\n`);
      return;
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const f = req.method === 'GET' ? files.get(path === '/' ? '/index.html' : path) : undefined;
    if (!f) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`no ${path}\n`);
      return;
    }
    res.writeHead(200, {
      'content-type': f.type,
      'content-length': f.body.length,
      'cache-control': 'no-cache',
      'content-security-policy': LIMITS.csp,
      'x-content-type-options': 'nosniff',
    });
    res.end(f.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/`,
    files,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const weight = (files: PageFiles): string =>
  [...files].map(([p, f]) => `${p.slice(1)} ${(f.body.length / 1024).toFixed(0)} KiB`).join(', ');

export function registerLabVerb(program: Command): void {
  program
    .command('lab')
    .description(
      'the browser lab: a plane and two nodes running in your browser (Web Workers), the air in the page, six self-checking labs',
    )
    .option(
      '--port <port>',
      'port on 127.0.0.1; 0 (the default) takes any free port',
      (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a TCP port');
        return n;
      },
      0,
    )
    .option('--out <dir>', 'write the static page to DIR (host it anywhere) instead of serving it')
    .addHelpText('after', '\nExamples:\n  retrokube lab\n  retrokube lab --out public/lab')
    .action(async (o: { port: number; out?: string }) => {
      const out = (s: string): void => void process.stdout.write(`${s}\n`);
      if (o.out) {
        const files = await labFiles();
        writePage(files, o.out);
        out(`browser lab written to ${o.out}: ${weight(files)}`);
        return;
      }
      const lab = await serveLab(o.port);
      out(
        `browser lab on ${lab.url} (${weight(lab.files)}); Ctrl-C stops the server, the page keeps running`,
      );
      await new Promise<void>((r) => {
        process.once('SIGINT', r);
        process.once('SIGTERM', r);
      });
      await lab.close();
    });
}

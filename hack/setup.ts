// The test suite's own set-up, run by `npm test` before the suites (and by nothing else).
// Idempotent: every step first asks whether its result is already there (a cache keyed by version
// or source hash) and says "ready" in one line; a second `npm test` costs about a second here.
// A slow step says how long it takes cold before it starts, and prints a progress line every
// PROGRESS_EVERY_MS while it runs; its full output goes to a log file whose path is printed.
//
//   npm run setup                 all steps (on the repository's Node.js 24; the system node may be older)
//   npm run setup -- --list       what each step is for, and whether it is ready, without doing anything
//
// Debian packages are installed when running as root; otherwise the set-up stops at once with the
// exact `apt-get install` line to run.
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'retrokube');
const LOG_DIR = join(CACHE, 'setup-logs');

const LIMITS = {
  progressEveryMs: 60_000, // a cold Go build prints nothing for minutes: one line a minute says it is alive
  failureTailLines: 25, // how much of a failed step's log to show (the whole log is in LOG_DIR)
  minGoMinor: 24, // k8s.io/kubernetes v1.34 needs Go 1.24 or newer
} as const;

/** Debian packages, each with the suite that needs it (the README lists the same). */
export const DEBIAN_PACKAGES: Record<string, string> = {
  unzip: 'envtest: helm and kubectl come out of an npm package as a zip',
  python3: 'unit: the KubeVirt hook sidecar is Python',
  vncsnapshot: 'host, cluster: a real RFB client takes screenshots of Oberon machines',
  containerd: 'cluster: the real node runs pods in containerd',
  runc: 'cluster: the OCI runtime under containerd',
  'containernetworking-plugins': 'cluster: pod networking (bridge, host-local, loopback)',
  iptables: 'cluster: kube-proxy programs Service ClusterIPs',
  conntrack: 'cluster: kube-proxy clears stale UDP flows (the air is UDP)',
  'busybox-static': "cluster: the product image's /bin/sh and the node's test pods",
  openssl: "cluster: the node's certificates",
  'gettext-base': "cluster: envsubst fills in the node's add-on manifests",
  'libjpeg-turbo-progs': "cluster, qemu: djpeg decodes what a real VNC client saw of a machine's screen",
  tmux: 'e2e: the live view of `retrokube up` is judged in a real terminal of 80×24',
  chromium: 'browser: the web console and the browser lab run in a real browser (driven by playwright-core)',
  iproute2: "qemu: the libvirt test gives libvirtd a network namespace of its own, as a pod's",
  buildah:
    'e2e: the root Dockerfile built by a real engine where no registry is reachable (hack/build-dockerfile.sh)',
  'docker.io':
    "e2e: the Sheeternetes agent's docker runtime against a real dockerd the test starts itself, with its own containerd, data root, socket and bridge, no iptables changes (test/e2e/sheets-docker.test.ts)",
  ...packageList(
    'qemu/libvirt/build-deps.txt',
    'qemu: building the risc5-patched libvirt (qemu/libvirt/build-deps.txt)',
  ),
  ...packageList('qemu/build-deps.txt', 'qemu: building qemu-system-risc5 (qemu/build-deps.txt)'),
};

/** One package per line of a build's list (# comments), each with the reason given. */
function packageList(file: string, why: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(join(REPO, file), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((pkg) => [pkg, why]),
  );
}

interface Step {
  name: string;
  why: string;
  /** Shown before a slow step starts; undefined for steps that take seconds. */
  coldEstimate?: string;
  /** True when the step's result is already there (must be cheap). */
  ready(): boolean;
  /** The command that produces it; its output goes to the step's log file. */
  command: string[];
  /**
   * Why the step needs root, for steps that do: without root it is skipped with that line (the
   * test that uses its result then says it did not run), and under CI=true that is a failure.
   */
  needsRoot?: string;
}

/** Build scripts answer `--check` with exit 0 when everything they build is cached. */
function scriptReady(script: string): boolean {
  try {
    execFileSync('bash', [join(REPO, script), '--check'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * What a build script prints with a flag that computes where its output goes and builds nothing;
 * '' when it cannot say (the step then runs, and its own log tells why it fails).
 */
function scriptPath(script: string, flag: string): string {
  try {
    return execFileSync('bash', [join(REPO, script), flag], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return '';
  }
}

const isFile = (path: string): boolean => path !== '' && existsSync(path);

const NODE_BINS = [
  'kubelet',
  'kube-scheduler',
  'kube-controller-manager',
  'kube-proxy',
  'coredns',
  'local-path-provisioner',
  'pause',
  'etcd',
];

const STEPS: Step[] = [
  {
    name: 'kube-apiserver, kine, helm, kubectl',
    why: 'envtest: a real API server (hack/build-testbins.sh)',
    coldEstimate: '4-5 min on 2 idle cores (Go modules + ~2,500 packages), up to 25 min on a loaded machine',
    ready: () => scriptReady('hack/build-testbins.sh'),
    command: ['bash', join(REPO, 'hack/build-testbins.sh')],
  },
  {
    name: 'kubelet, scheduler, controller-manager, kube-proxy, CoreDNS, provisioner, pause',
    why: 'cluster: the real node (hack/build-node-bins.sh)',
    coldEstimate: 'about 5 min after the step above (it reuses its Go build cache)',
    ready: () => {
      const dir = scriptPath('hack/build-node-bins.sh', '--print-dir');
      return dir !== '' && NODE_BINS.every((b) => existsSync(join(dir, b)));
    },
    command: ['bash', join(REPO, 'hack/build-node-bins.sh')],
  },
  {
    name: "Flux's helm-controller and source-controller",
    why: 'cluster: the catalog installed through HelmRepository + HelmRelease as Cozystack does (hack/build-flux-bins.sh)',
    coldEstimate:
      'about 5-8 min on 2 idle cores after the steps above (their Go module and build caches are shared), much longer on a loaded machine',
    ready: () => {
      const dir = scriptPath('hack/build-flux-bins.sh', '--print-dir');
      return dir !== '' && ['helm-controller', 'source-controller'].every((b) => existsSync(join(dir, b)));
    },
    command: ['bash', join(REPO, 'hack/build-flux-bins.sh')],
  },
  {
    name: 'Oberon base disk image',
    why: 'unit, e2e: Project Oberon 2013 base image, found or downloaded, sha256 checked',
    ready: () => baseImageReady(),
    command: [process.execPath, join(REPO, 'operator/src/cli/main.ts'), 'disk', 'base'],
  },
  {
    name: 'qemu-system-risc5 (our RISC5 target on the QEMU 7.2 of Debian)',
    why: 'qemu, e2e: the QEMU model beside the TypeScript emulator (qemu/build.sh)',
    coldEstimate: 'about 8 min on 2 idle cores (apt-get source qemu, one target, minimal configure)',
    ready: () => isFile(scriptPath('qemu/build.sh', '--print-path')),
    command: ['bash', join(REPO, 'qemu/build.sh')],
  },
  {
    name: "libvirt 9.0 source of Debian (for the libvirt patch's test)",
    why: 'qemu: qemu/libvirt/patch_libvirt.py is proven on the real libvirt source (qemu/libvirt/source.sh)',
    coldEstimate: 'under a minute (apt-get source, after the QEMU step wrote its deb-src list)',
    ready: () => scriptReady('qemu/libvirt/source.sh'),
    command: ['bash', join(REPO, 'qemu/libvirt/source.sh')],
  },
  {
    name: 'libvirt 9.0 of Debian with our risc5 patch (QEMU driver, libvirtd, virsh only)',
    why: "qemu: virsh defines and starts the hook's domain on a real libvirtd (qemu/libvirt/build.sh)",
    coldEstimate: 'about 2 min on 2 idle cores (532 ninja steps; 7.8 min measured at load 25)',
    ready: () => scriptReady('qemu/libvirt/build.sh'),
    command: ['bash', join(REPO, 'qemu/libvirt/build.sh')],
  },
  {
    name: 'KubeVirt v1.8.4: its components and images, our RISC5 launcher (hack/build-kubevirt.sh)',
    why: 'cluster: KubeVirt installed on the real node as users install it, our machines as its VMs (test/cluster/kubevirt.test.ts)',
    coldEstimate:
      'about 4 min on a lightly loaded 2-core machine after the steps above (one cgo go build of 1,455 packages, six images); an hour on a machine at load 20-40',
    ready: () => scriptReady('hack/build-kubevirt.sh'),
    command: ['bash', join(REPO, 'hack/build-kubevirt.sh')],
    needsRoot:
      "the launcher image's virt-launcher-monitor gets a file capability (setcap), as KubeVirt's own image has",
  },
  {
    name: 'the product image (an OCI archive, built without Docker)',
    why: 'cluster: imported into containerd for the chart, the relay and the machine pods; e2e: what the Dockerfile built by buildah is compared with (hack/build-image.sh)',
    coldEstimate: 'about a minute (production npm install, the Kube disk built by ORP in the emulator)',
    ready: () => isFile(scriptPath('hack/build-image.sh', '--print-path')),
    command: ['bash', join(REPO, 'hack/build-image.sh')],
  },
  {
    name: 'the root Dockerfile built by buildah (an OCI archive)',
    why: 'e2e: test/e2e/dockerfile-build.test.ts compares it with the product image and runs it (hack/build-dockerfile.sh)',
    coldEstimate:
      'about 4 min on a busy 2-core machine (the node base, npm ci inside the build, the Kube disk); after a change in operator/ only its COPY runs again: about 40 CPU-s, 1-2 min on a busy machine (bench/dockerfile)',
    ready: () => isFile(scriptPath('hack/build-dockerfile.sh', '--print-path')),
    command: ['bash', join(REPO, 'hack/build-dockerfile.sh')],
    needsRoot: 'buildah mounts the layers it builds',
  },
];

function baseImageReady(): boolean {
  try {
    const out = execFileSync(
      process.execPath,
      [join(REPO, 'operator/src/cli/main.ts'), 'disk', 'base', '--no-download', '-o', 'json'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    return JSON.parse(out).path !== undefined;
  } catch {
    return false;
  }
}

function say(line: string): void {
  process.stdout.write(`[setup] ${line}\n`);
}

function fail(line: string): never {
  process.stderr.write(`[setup] ${line}\n`);
  process.exit(1);
}

function secondsSince(t0: number): string {
  return `${((Date.now() - t0) / 1000).toFixed(1)} s`;
}

/** Stops at once, naming what to install, when a package is missing and we are not root. */
function ensureDebianPackages(): void {
  const t0 = Date.now();
  const missing = Object.keys(DEBIAN_PACKAGES).filter((p) => !debInstalled(p));
  if (missing.length === 0) {
    say(`Debian packages: ready (${Object.keys(DEBIAN_PACKAGES).length}) (${secondsSince(t0)})`);
    return;
  }
  const line = `apt-get update && apt-get install -y ${missing.join(' ')}`;
  if (process.getuid?.() !== 0) {
    fail(
      `Debian packages missing: ${missing.join(', ')}. Run as root:  sudo sh -c '${line}'  then npm test again.`,
    );
  }
  say(`Debian packages: installing ${missing.join(', ')} (about a minute)`);
  const log = join(LOG_DIR, 'apt.log');
  try {
    execFileSync('sh', ['-c', `${line} >${log} 2>&1`], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: 'inherit',
    });
  } catch {
    fail(`apt-get failed; see ${log}`);
  }
  say(`Debian packages: installed (${secondsSince(t0)})`);
}

function debInstalled(pkg: string): boolean {
  try {
    // dpkg's own ${Status} field placeholder, not a template string
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format syntax
    const out = execFileSync('dpkg-query', ['-W', '-f=${Status}', pkg], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return out.includes('install ok installed');
  } catch {
    return false;
  }
}

function ensureGo(): void {
  let version = '';
  try {
    version = execFileSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' }).trim();
  } catch {
    fail(
      'the Go toolchain (go) is not on PATH; install Go 1.24 or newer (https://go.dev/dl) and run npm test again.',
    );
  }
  const minor = Number(/^go1\.(\d+)/.exec(version)?.[1] ?? 0);
  if (minor < LIMITS.minGoMinor) {
    fail(`${version} is too old to build Kubernetes 1.34; install Go 1.${LIMITS.minGoMinor} or newer.`);
  }
}

/** Runs a slow step with its output in a log file and a progress line every minute. */
function runStep(step: Step, index: number): Promise<void> {
  const t0 = Date.now();
  const log = join(LOG_DIR, `${index + 1}-${step.name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.log`);
  say(`${step.name}: building${step.coldEstimate ? ` (cold: ${step.coldEstimate})` : ''}; log: ${log}`);
  const out = createWriteStream(log);
  const child = spawn(step.command[0], step.command.slice(1), {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(out, { end: false });
  child.stderr.pipe(out, { end: false });
  let lastLine = '';
  // The build scripts' own progress lines start with "[" (e.g. "[build-testbins 02:27:18] ...").
  const remember = (chunk: Buffer) => {
    const lines = chunk
      .toString()
      .split('\n')
      .filter((l) => l.startsWith('['));
    if (lines.length > 0) lastLine = lines[lines.length - 1];
  };
  child.stdout.on('data', remember);
  child.stderr.on('data', remember);
  const timer = setInterval(() => {
    const minutes = Math.round((Date.now() - t0) / 60_000);
    say(`${step.name}: still working, ${minutes} min so far${lastLine ? ` — ${lastLine}` : ''}`);
  }, LIMITS.progressEveryMs);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearInterval(timer);
      out.end(() => {
        if (code === 0) {
          say(`${step.name}: done (${secondsSince(t0)})`);
          resolve();
          return;
        }
        const tail = execFileSync('tail', ['-n', String(LIMITS.failureTailLines), log], { encoding: 'utf8' });
        process.stderr.write(tail);
        fail(`${step.name}: failed (exit ${code}) after ${secondsSince(t0)}; whole log: ${log}`);
      });
    });
  });
}

async function main(): Promise<void> {
  mkdirSync(LOG_DIR, { recursive: true });
  if (process.argv.includes('--list')) {
    for (const [pkg, why] of Object.entries(DEBIAN_PACKAGES)) {
      say(`deb ${pkg}: ${debInstalled(pkg) ? 'installed' : 'missing'} — ${why}`);
    }
    for (const step of STEPS) say(`${step.name}: ${step.ready() ? 'ready' : 'missing'} — ${step.why}`);
    return;
  }
  const t0 = Date.now();
  ensureDebianPackages();
  ensureGo();
  for (const [i, step] of STEPS.entries()) {
    const t = Date.now();
    if (step.ready()) {
      say(`${step.name}: ready (${secondsSince(t)})`);
      continue;
    }
    if (step.needsRoot && process.getuid?.() !== 0) {
      const line = `${step.name}: needs root (${step.needsRoot}); run npm test as root`;
      if (process.env.CI === 'true') fail(line);
      say(`${line} — skipped, the test that uses it says it did not run`);
      continue;
    }
    await runStep(step, i);
  }
  say(`all set in ${secondsSince(t0)}`);
}

if (!existsSync(join(REPO, 'package.json'))) fail(`cannot find the repository at ${REPO}`);
await main();

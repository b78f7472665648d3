import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// Projects, run one after the other (sequence.groupOrder) so the real-time e2e machines never
// compete for the 2 cores with CPU-heavy unit tests. `npm test` runs the set-up (hack/setup.ts)
// first; `npm run test:unit` needs nothing but `npm install`.
// - unit: needs nothing but Node;
// - host: uses programs from Debian packages the set-up installs (files named *.host.test.ts);
// - envtest: needs kube-apiserver and kine (hack/build-testbins.sh); its global setup starts them once;
// - qemu: qemu-system-risc5 (qemu/build.sh) against the TS emulator, instruction by instruction;
// - e2e: emulated Oberon machines on a real UDP air, judged from the air, in real time; e2e-pairs
//   (right after it): those of its files that mostly wait, two at a time (E2E_PAIRED);
// - cluster: a real node (hack/node-up.sh: kubelet, containerd, kube-proxy, CoreDNS) or any
//   kubeconfig in RETROKUBE_CLUSTER_KUBECONFIG; the chart, the image and machine pods for real;
// - nodes: several real nodes on this machine (hack/nodes-up.sh), beside the envtest files;
// - browser: the web console and the browser lab in Debian's chromium (playwright-core), real time.
// envtest files that run alone, on a server of their own: those that restart kube-apiserver
// (restartApiServer).
const ENVTEST_ALONE = [
  'test/envtest/harness.test.ts',
  'test/envtest/oberonair-restart.test.ts',
  'test/envtest/control-plane-etcd.test.ts',
];
// e2e files that run two at a time (e2e-pairs): each is a few emulated machines or one `retrokube up`
// waiting on the air in real time, not on the cores (test/e2e/labs-judge.test.ts: 33 s of CPU in
// 283 s of wall). Every other e2e file runs alone (e2e): new ones until they have passed paired,
// sheets-docker (its own dockerd), dockerfile-build (buildah) and kube-load (9 machines at its
// largest size, with a rest window that must be quiet). Longest first (a CI rehearsal's times), the
// order they start in (PairsInOrder), so the two workers end together.
const E2E_PAIRED = [
  'test/e2e/up-rollouts.test.ts',
  'test/e2e/labs-judge.test.ts',
  'test/e2e/kube-dr.test.ts',
  'test/e2e/kube-hold.test.ts',
  'test/e2e/kube-replay.test.ts',
  'test/e2e/up.test.ts',
  'test/e2e/up-rollouts-sheets.test.ts',
  'test/e2e/up-view.test.ts',
  'test/e2e/kube-trap.test.ts',
  'test/e2e/kube-boot.test.ts',
  'test/e2e/kube-disk.test.ts',
  'test/e2e/machine-real.test.ts',
  'test/e2e/kube-key-masked.test.ts',
  'test/e2e/sheets-up.test.ts',
  'test/e2e/kube-live.test.ts',
  'test/e2e/kube-interop.test.ts',
  'test/e2e/kube-rolling.test.ts',
  'test/e2e/kube-store.test.ts',
  'test/e2e/up-vnc.test.ts',
];

/**
 * vitest's order, with two changes. The e2e-pairs files in E2E_PAIRED's order: vitest's own puts
 * larger files first when it has no timings of its own (a clean clone, as in CI): kube-dr.test.ts,
 * 5 lines and 160 s, came last and ran alone for its whole length. And the `nodes` project's one
 * long file first in its group: vitest orders a group's projects by name, so it started after every
 * envtest file and ran alone for ten minutes instead of beside them.
 */
class PairsInOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const out = await super.sort(files);
    const paired = (f: TestSpecification) => f.project.name === 'e2e-pairs';
    const rank = (f: TestSpecification) => E2E_PAIRED.indexOf(relative(f.project.config.root, f.moduleId));
    const ordered = out.filter(paired).sort((a, b) => rank(a) - rank(b));
    const inOrder = out.map((f) => (paired(f) ? (ordered.shift() ?? f) : f));
    return leadsItsGroup(inOrder, (f) => f.project.name === 'nodes');
  }
}

/** `files` with those that `lead` picks moved to the front of their group (stable otherwise). */
export function leadsItsGroup<T extends { project: { config: { sequence: { groupOrder: number } } } }>(
  files: T[],
  lead: (f: T) => boolean,
): T[] {
  const leaders = files.filter(lead);
  const rest = files.filter((f) => !lead(f));
  for (const l of leaders.reverse()) {
    const group = l.project.config.sequence.groupOrder;
    const at = rest.findIndex((f) => f.project.config.sequence.groupOrder === group);
    rest.splice(at < 0 ? rest.length : at, 0, l);
  }
  return rest;
}

/**
 * The several nodes run unless RETROKUBE_MULTINODE=0, or unless the suite is pointed at another
 * cluster (RETROKUBE_CLUSTER_KUBECONFIG: the several nodes are made on this machine only).
 */
const SEVERAL_NODES = process.env.RETROKUBE_MULTINODE !== '0' && !process.env.RETROKUBE_CLUSTER_KUBECONFIG;
/**
 * Cluster files whose cases the several-node file runs too (test/cluster/cases/): while the
 * several nodes run, the single node leaves them out, so they run once, where nodes come and go
 * (they moved from the single node's sequential group to the one beside envtest's files).
 */
const SEVERAL_NODES_CARRY = [
  'test/cluster/sheetcluster-google.test.ts',
  'test/cluster/sheetmigration.test.ts',
];
/**
 * Several nodes (hack/nodes-up.sh: a control plane and three workers, started by the file itself),
 * in the envtest group: a group runs its files on a pool of its projects' common maxWorkers, and
 * envtest's 2 are the only ones beside which one long file can run (the cluster and browser groups
 * run one file at a time). The several nodes share nothing with envtest's API server, and most of
 * both projects' time is waiting for convergence.
 */
const NODES_PROJECT = {
  test: {
    name: 'nodes',
    sequence: { groupOrder: 2 },
    include: ['test/cluster/nodes.test.ts'],
    globalSetup: ['test/cluster/nodes-setup.ts'],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    maxWorkers: 2, // the envtest group's (vitest refuses a group of two counts)
  },
};

export default defineConfig({
  test: {
    sequence: { sequencer: PairsInOrder },
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: ['operator/src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          exclude: ['**/*.host.test.ts', '**/node_modules/**'],
          // No translator hints from the user's cache (jit-hints.ts): each file starts as a first
          // run would; jit-hints.test.ts gives its machines folders of their own.
          env: { RETROKUBE_JIT_HINTS: 'off' },
          testTimeout: 30_000,
          // vitest's default on 2 cores is 1 worker; most unit files wait on sockets, timers and
          // child processes, so two side by side halve the project's wall time (452 s → 228 s,
          // 749 tests green, on this 2-core host).
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: 'host',
          sequence: { groupOrder: 1 },
          include: ['operator/src/**/*.host.test.ts'],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          // Each file works in namespaces of its own with an operator scoped to them, so two files
          // share the API server side by side (most of their time is waiting for convergence).
          name: 'envtest',
          sequence: { groupOrder: 2 },
          include: ['test/envtest/**/*.test.ts'],
          exclude: ENVTEST_ALONE,
          globalSetup: ['test/envtest/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          maxWorkers: 2,
        },
      },
      {
        test: {
          // ENVTEST_ALONE: their own server (a second global setup), one file at a time.
          name: 'envtest-alone',
          sequence: { groupOrder: 3 },
          include: ENVTEST_ALONE,
          globalSetup: ['test/envtest/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // qemu-system-risc5 (qemu/build.sh) against the TS emulator; needs the QEMU build.
          name: 'qemu',
          sequence: { groupOrder: 4 },
          include: ['test/qemu/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          sequence: { groupOrder: 5 },
          include: ['test/e2e/**/*.test.ts', ...E2E_PAIRED.map((f) => `!${f}`)],
          testTimeout: 600_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // E2E_PAIRED, two files at a time, right after e2e (a group of its own: vitest's
          // maxWorkers is one per group).
          name: 'e2e-pairs',
          sequence: { groupOrder: 6 },
          include: E2E_PAIRED,
          testTimeout: 600_000,
          hookTimeout: 600_000,
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: 'cluster',
          sequence: { groupOrder: 8 },
          include: ['test/cluster/**/*.test.ts'],
          exclude: [
            'test/cluster/nodes.test.ts', // the `nodes` project's
            ...(SEVERAL_NODES ? SEVERAL_NODES_CARRY : []),
            // The 10-node spread (11 machine pods): written, never yet run whole (docs/testing.md).
            ...(process.env.RETROKUBE_SPREAD10 === '1' ? [] : ['test/cluster/oberonkube-spread.test.ts']),
            // KubeVirt (built by a set-up step, installed by hack/kubevirt-up.sh) runs by default;
            // RETROKUBE_KUBEVIRT=0 leaves it out of a quick run (docs/testing.md).
            ...(process.env.RETROKUBE_KUBEVIRT === '0' ? ['test/cluster/kubevirt.test.ts'] : []),
          ],
          globalSetup: ['test/cluster/global-setup.ts'],
          setupFiles: ['test/cluster/node-ready.ts'], // waits for the node the global setup starts
          testTimeout: 600_000,
          hookTimeout: 600_000, // the global setup may build the image and start the node
          fileParallelism: false,
        },
      },
      ...(SEVERAL_NODES ? [NODES_PROJECT] : []),
      {
        test: {
          name: 'browser',
          sequence: { groupOrder: 7 },
          include: ['test/browser/**/*.test.ts'],
          testTimeout: 900_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

// Loaded into an operator under benchmark (NODE_OPTIONS=--import=<this file>), never by the operator
// itself: on SIGUSR2 it writes what the process's memory is made of, as V8 and Node see it, to
// $RK_MEM_PROBE_OUT (JSON), so a bench can set it beside /proc/PID/smaps_rollup (what the kernel
// sees) and tell the JS heap from the rest of RSS. With RK_MEM_PROBE_GC=1 it then runs a full GC
// and measures again (`afterFullGc`): what of the heap is live, what is garbage or free space that
// the heap keeps committed until its next full GC. With RK_MEM_PROBE_SNAPSHOT=FILE it writes a heap
// snapshot there last (an analysis run: at 1,000 clusters a snapshot doubles the RSS). JavaScript,
// not TypeScript: it loads before the operator's compile cache is on, and a .ts here would load
// Node's type stripper into every variant (~25 MiB).
import { readFileSync, writeFileSync } from 'node:fs';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

const out = process.env.RK_MEM_PROBE_OUT;
if (out) {
  process.on('SIGUSR2', () => {
    const probe = measure();
    if (process.env.RK_MEM_PROBE_GC === '1') {
      // --expose-gc set at run time: `gc` exists in contexts made after it.
      v8.setFlagsFromString('--expose-gc');
      runInNewContext('gc')();
      probe.afterFullGc = { ...measure(), vmRssMiB: vmRssMiB() };
    }
    writeFileSync(out, JSON.stringify(probe));
    const snapshot = process.env.RK_MEM_PROBE_SNAPSHOT;
    if (snapshot) v8.writeHeapSnapshot(snapshot);
  });
}

function measure() {
  const spaces = Object.fromEntries(
    v8.getHeapSpaceStatistics().map((s) => [
      s.space_name,
      {
        sizeMiB: mib(s.space_size),
        usedMiB: mib(s.space_used_size),
        physicalMiB: mib(s.physical_space_size),
      },
    ]),
  );
  const h = v8.getHeapStatistics();
  const m = process.memoryUsage();
  const c = v8.getHeapCodeStatistics();
  return {
    at: new Date().toISOString(),
    memoryUsage: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, mib(v)])),
    heap: {
      totalPhysicalMiB: mib(h.total_physical_size),
      mallocedMiB: mib(h.malloced_memory),
      peakMallocedMiB: mib(h.peak_malloced_memory),
      externalMiB: mib(h.external_memory),
    },
    code: {
      bytecodeAndMetadataMiB: mib(c.bytecode_and_metadata_size),
      codeAndMetadataMiB: mib(c.code_and_metadata_size),
      externalScriptSourceMiB: mib(c.external_script_source_size),
    },
    spaces,
  };
}

function vmRssMiB() {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
  return mib(kb * 1024);
}

/** @param {number} bytes */
function mib(bytes) {
  return Math.round((bytes / 1048576) * 10) / 10;
}

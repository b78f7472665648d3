// Loaded into an operator under benchmark (NODE_OPTIONS=--import=<this file>), never by the operator
// itself: on SIGUSR2 it writes what the process's memory is made of, as V8 and Node see it, to
// $RK_MEM_PROBE_OUT (JSON), so a bench can set it beside /proc/PID/smaps_rollup (what the kernel
// sees) and tell the JS heap from the rest of RSS. Takes no heap snapshot: at 1,000 clusters one
// would double the RSS it measures. JavaScript, not TypeScript: it loads before the operator's
// compile cache is on, and a .ts here would load Node's type stripper into every variant (~25 MiB).
import { writeFileSync } from 'node:fs';
import v8 from 'node:v8';

const out = process.env.RK_MEM_PROBE_OUT;
if (out) {
  process.on('SIGUSR2', () => {
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
    writeFileSync(
      out,
      JSON.stringify({
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
      }),
    );
  });
}

/** @param {number} bytes */
function mib(bytes) {
  return Math.round((bytes / 1048576) * 10) / 10;
}

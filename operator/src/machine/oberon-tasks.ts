// Oberon's task ring, read from RAM, so an idle machine can sleep until the next task is due
// instead of waking on a fixed beat. Oberon.Loop runs CurTask when Kernel.Time() >= its nextTime
// (Oberon.Mod: TaskDesc = state, nextTime, period, next, handle). The ring is reached through the
// module Oberon's variables NofTasks and CurTask, declared one after the other; their place
// depends on how Oberon.Mod was compiled, so it is found once by its shape and checked on every
// use: a wrong guess only costs a wake-up, never a missed task (the caller keeps its own beat).

export const LIMITS = {
  maxTasks: 64, // longer rings are not believed (Oberon's own count must match the ring)
  descData: 52, // ModDesc: name[32], next, key, num, size, refcnt, then data at +52, code at +56
  descCode: 56,
} as const;

// "Ober" "on" 0X as little-endian words: the descriptor's name field.
const NAME0 = 0x7265624f;
const NAME1 = 0x00006e6f;

export interface TaskRing {
  /** Byte address of the variable CurTask (NofTasks is the word before). */
  curTaskVar: number;
}

/** Earliest nextTime (Oberon ms) over the ring at curTaskVar, or null if it does not look like one. */
export function nextTaskDue(
  mem: Int32Array,
  ring: TaskRing,
  heapOrg: number,
  heapLim: number,
): number | null {
  const count = mem[(ring.curTaskVar - 4) >>> 2];
  const first = mem[ring.curTaskVar >>> 2];
  if (count < 1 || count > LIMITS.maxTasks) return null;
  let t = first;
  let due = Number.POSITIVE_INFINITY;
  for (let i = 0; i < count; i++) {
    if (t < heapOrg || t >= heapLim || (t & 3) !== 0) return null;
    const w = t >>> 2;
    const state = mem[w];
    if (state < 0 || state > 2) return null;
    due = Math.min(due, mem[w + 1]);
    t = mem[w + 3];
    if (t === first && i < count - 1) return null; // closed too early
  }
  return t === first ? due : null; // the ring closes after exactly NofTasks tasks
}

/** Find Oberon's CurTask variable: the module descriptor named Oberon, then a NofTasks/CurTask pair. */
export function findTaskRing(mem: Int32Array, heapOrg: number, heapLim: number): TaskRing | null {
  const limit = Math.min(heapOrg, mem.length * 4) >>> 2; // modules lie below the heap
  for (let w = 0; w + (LIMITS.descCode >>> 2) < limit; w++) {
    if (mem[w] !== NAME0 || (mem[w + 1] & 0x00ffffff) !== NAME1) continue;
    const data = mem[w + (LIMITS.descData >>> 2)];
    const code = mem[w + (LIMITS.descCode >>> 2)];
    if (data <= w * 4 || code <= data || code > limit * 4 || (data & 3) !== 0) continue;
    for (let v = data + 4; v < code; v += 4) {
      const ring = { curTaskVar: v };
      if (nextTaskDue(mem, ring, heapOrg, heapLim) !== null) return ring;
    }
  }
  return null;
}

// Reading Oberon's task ring from RAM: the base image has one task (the garbage collector, every
// 1000 ms); its due time moves by its period when Oberon.Loop runs it, and a ring that no
// longer checks out is not believed.
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { Machine } from './machine.ts';
import { findTaskRing, nextTaskDue } from './oberon-tasks.ts';
import { copyBaseImage, removeCopies } from './test-disk.ts';

afterAll(removeCopies);

describe("Oberon's task ring", () => {
  it('is found after boot, gives the collector due within 1000 ms, and follows it as it runs', () => {
    const m = new Machine({ disk: fs.readFileSync(copyBaseImage()), clock: 'deterministic', jit: false });
    expect(findTaskRing(m.cpu.mem, m.stackOrg, m.memLim), 'no ring before boot').toBeNull();
    expect(m.runUntil(() => m.booted, { maxInstructions: 60e6 })).toBe(true);
    const ring = findTaskRing(m.cpu.mem, m.stackOrg, m.memLim);
    expect(ring).not.toBeNull();
    if (ring === null) return;
    expect(m.cpu.mem[(ring.curTaskVar - 4) >>> 2], 'NofTasks').toBe(1);
    const due = nextTaskDue(m.cpu.mem, ring, m.stackOrg, m.memLim) ?? -1;
    const now = m.timerMs();
    expect(due).toBeGreaterThan(now - 1000);
    expect(due).toBeLessThanOrEqual(now + 1000);
    m.runFor(due - now + 50); // past the due time: the Loop runs the collector and re-arms it
    const next = nextTaskDue(m.cpu.mem, ring, m.stackOrg, m.memLim) ?? -1;
    expect(next - due).toBeGreaterThanOrEqual(1000);
    expect(next).toBeGreaterThan(m.timerMs());
    // The machine's own view agrees (it finds the ring by itself).
    expect(m.nextTaskDueMs()).toBe(next);
    // A broken ring (NofTasks no longer matches) is not believed.
    m.cpu.mem[(ring.curTaskVar - 4) >>> 2] = 2;
    expect(nextTaskDue(m.cpu.mem, ring, m.stackOrg, m.memLim)).toBeNull();
  });
});

// The relay's counters in one line for people (`air relay --summary`, `air state`).
import type { RelayStats } from './relay-types.ts';

/** One line for people: what the air carried so far. */
export function relaySummary(st: RelayStats, loss: number, on: boolean): string {
  const dropped = st.droppedLoss + st.droppedRate + st.droppedOff + st.droppedCut + st.droppedQueue;
  return (
    `air ${on ? 'on' : 'OFF'}: ${st.peers} stations, ${st.framesIn} frames in, ${st.framesOut} out, ` +
    `${dropped} dropped (loss ${st.droppedLoss}, rate ${st.droppedRate}, off ${st.droppedOff}, cut ${st.droppedCut}, queue full ${st.droppedQueue}), ` +
    `${st.malformed} malformed, loss ${Math.round(loss * 100)}%`
  );
}

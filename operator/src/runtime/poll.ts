// How often a controller re-examines each of its objects when nothing changed (a poll: what the
// operator hears on an air is not an event). A fixed period makes the cost grow with the count:
// 1,000 OberonKubes every 2 s and 1,000 OberonAirs every 5 s were 700 reconciles/s at rest, ~1 ms
// each, which saturated the operator's event loop on the bench host — creations, metrics and the
// watch streams all waited behind the polls, and a watch the API server found too slow was cut
// (a relist of 4,000 machines). So the period stretches with the number of objects: the polls of
// one controller stay near a fixed share of a core however many objects there are.

/** The period between polls of one object: `baseMs`, or `perObjectMs` for each of `objects` if longer. */
export function pollPeriod(baseMs: number, objects: number, perObjectMs: number): number {
  return Math.max(baseMs, Math.round(objects * perObjectMs));
}

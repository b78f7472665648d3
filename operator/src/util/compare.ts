// String order by UTF-16 code units, for sorts that only need to be stable and the same everywhere.
// `localeCompare` is ICU collation: its first call maps ~5 MiB of Node's built-in ICU data into
// the process (resident, counted in RSS: #32's operator budget), and its order varies with the
// locale — neither is wanted for names, timestamps and reasons in a status.

/** -1, 0 or 1 as `a` sorts before, with or after `b` by code unit. */
export function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

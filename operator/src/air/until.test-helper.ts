/** Polls cond every pollMs until it holds; fails the test saying what it waited for after ms. */
export async function until(cond: () => boolean, ms = 5000, what = 'condition', pollMs = 10): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

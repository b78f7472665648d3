/** Whether a process with this pid exists (EPERM: it does, but belongs to someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A stop asked for by Ctrl-C, SIGTERM or code (`stop()`); `release()` stops listening for the signals. */
export function stopOnSignal(): { stopped: Promise<void>; stop(): void; release(): void } {
  let stop!: () => void;
  const stopped = new Promise<void>((r) => {
    stop = r;
  });
  const onSignal = (): void => stop();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    stopped,
    stop,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

#!/usr/bin/env node
// The one command of the project: every role (operator, air relay, machine, sheets node, ...) is a verb.
import { CommanderError } from 'commander';
import { programFor } from './program.ts';

// `retrokube --help | head`: the reader closed the pipe, which is not a failure of ours. Without a
// listener the EPIPE of the next write is an unhandled 'error' event and a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

try {
  await (await programFor(process.argv.slice(2))).parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode;
  } else {
    // A failed verb exits non-zero with a one-line reason; the stack is for RETROKUBE_DEBUG=1.
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`retrokube: ${message}\n`);
    if (process.env.RETROKUBE_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  }
}

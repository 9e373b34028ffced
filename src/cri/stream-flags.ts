import { invalidArgument } from '../errors';

/** Exec and Attach: at least one stream, and no stderr beside a terminal. */
export function checkStreams(req: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean }): void {
  if (!req.stdin && !req.stdout && !req.stderr) throw invalidArgument('one of stdin, stdout or stderr must be set');
  if (req.tty && req.stderr)
    throw invalidArgument('tty and stderr cannot both be set: a terminal merges stderr into stdout');
}

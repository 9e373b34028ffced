import { spawn, type ChildProcess } from 'child_process';
import { closeSync, fstatSync, mkdirSync, openSync, readSync, rmSync, unlink, writeFileSync } from 'fs';
import type { Socket } from 'net';
import { constants } from 'os';
import * as path from 'path';
import { which } from '../host-binaries';

/**
 * How a CNI plugin binary gets started. Node's spawn forks the whole daemon, and
 * the kernel copies its page tables for the child and tears them down at its
 * exec: at crishim's ~70 MiB that blocks the event loop for several ms per
 * plugin and costs as much CPU again (docs/how-it-works.md, "How CRI maps onto
 * Docker"), six plugin runs a pod. `ShellLauncher` keeps one small shell that forks the
 * plugins instead, told what to run through a pipe and files in a private
 * directory. `directLauncher` is Node's spawn, for where no such shell can run.
 */

/** A plugin printing more than this is broken; the rest of its output is dropped. */
export const MAX_OUTPUT = 1 << 20;

/** How a plugin process ended, with what it printed (each capped at MAX_OUTPUT). */
export interface PluginExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface PluginProcess {
  /** Settles when the process is gone; rejects when it could not be started. */
  readonly done: Promise<PluginExit>;
  /** SIGKILL to the plugin and whatever it started (its own process group). */
  kill(): void;
}

export interface PluginLauncher {
  launch(bin: string, env: Record<string, string>, stdin: string): PluginProcess;
  /** Lets go of what the launcher keeps running; plugins already started run to their end. */
  close(): void;
}

/** `text` and as much of `chunk` as fits under MAX_OUTPUT. */
const capped = (text: string, chunk: Buffer): string =>
  text.length < MAX_OUTPUT ? text + chunk.toString('utf8', 0, MAX_OUTPUT - text.length) : text;

/** SIGKILL to a process group, else (not a group leader yet) to the process. */
function killGroup(pid: number): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL');
      return;
    } catch {
      /* gone, or not yet its own group: try the process */
    }
  }
}

/** Node's spawn: forks the daemon itself for each plugin. */
export const directLauncher: PluginLauncher = {
  launch(bin, env, stdin) {
    let child: ChildProcess | undefined;
    const done = new Promise<PluginExit>((resolve, reject) => {
      // its own process group, so a kill also reaches what the plugin started (a shell script's sleep, iptables...)
      const c = spawn(bin, [], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
      child = c;
      let stdout = '';
      let stderr = '';
      c.stdout.on('data', (chunk: Buffer) => (stdout = capped(stdout, chunk)));
      c.stderr.on('data', (chunk: Buffer) => (stderr = capped(stderr, chunk)));
      c.on('error', reject);
      c.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
      c.stdin.on('error', () => undefined); // a plugin may exit before reading its config
      c.stdin.end(stdin);
    });
    return {
      done,
      kill() {
        // no pid: the spawn failed, nothing runs
        if (child?.pid) killGroup(child.pid);
      },
    };
  },
  close() {
    /* keeps nothing */
  },
};

/**
 * The shell's loop, given the scratch directory ($1) and setsid ($2). Each request line `ID BIN` names
 * files in it: `ID.env` (export lines) and `ID.in` (the plugin's stdin); the plugin writes `ID.out`
 * and `ID.err`. Files, not a directory per run: removing a directory costs Node several times its
 * four unlinks. PWD goes (sh exports it), and no `cd` (it would export OLDPWD too).
 * Replies, one short line each (atomic on a pipe): `ID pid N` once started, then
 * `ID exit N` (a signal's death as 128 + its number). setsid gives the plugin its
 * own process group. No file size limit: it would hold for every file the plugin
 * writes (its own logs too), and a plugin printing without end is killed at the
 * exec timeout either way; only MAX_OUTPUT of each file is read.
 */
const LOOP = `d=$1 setsid=$2
unset PWD OLDPWD
while IFS= read -r line; do
  id=\${line%% *} bin=\${line#* }
  {
    ( . "$d/$id.env" && exec "$setsid" "$bin" <"$d/$id.in" >"$d/$id.out" 2>"$d/$id.err" ) &
    echo "$id pid $!"
    wait $!
    echo "$id exit $?"
  } &
done`;

/** A value in single quotes for the shell: nothing inside is special but the quote itself. */
const shellQuote = (v: string): string => `'${v.replace(/'/g, `'\\''`)}'`;

/** At most MAX_OUTPUT bytes of a file the plugin wrote ('' when it is missing). */
function readCapped(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return '';
  }
  try {
    // sized to the file: a plugin prints a little JSON, so no megabyte buffer each time
    const buf = Buffer.allocUnsafe(Math.min(fstatSync(fd).size, MAX_OUTPUT));
    let n = 0;
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null);
    return buf.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
}

interface Pending {
  resolve(exit: PluginExit): void;
  reject(err: Error): void;
  pid?: number;
  killed: boolean;
}

/** Signal numbers back to names, for a shell status of 128 + N. */
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/** A shell's `$?` as a process's end: above 128 a death by signal, when that names one. */
function fromShellStatus(status: number): Pick<PluginExit, 'code' | 'signal'> {
  const signal = status > 128 ? SIGNAL_NAMES.get(status - 128) : undefined;
  return signal ? { code: null, signal } : { code: status, signal: null };
}

/**
 * The shell launcher when it has a scratch directory and this host has what it needs (sh and
 * setsid, which every Debian, RHEL and busybox system carries), else Node's spawn; `why` says
 * which and why.
 */
export function pluginLauncher(
  dir: string | undefined,
  find: (bin: string) => string | undefined = which,
): { launcher: PluginLauncher; why: string } {
  if (!dir) return { launcher: directLauncher, why: 'no scratch directory given: plugins are spawned by crishim' };
  const shell = find('sh');
  const setsid = find('setsid');
  if (!shell || !setsid)
    return { launcher: directLauncher, why: `no ${shell ? 'setsid' : 'sh'} found: plugins are spawned by crishim` };
  return {
    launcher: new ShellLauncher(dir, shell, setsid),
    why: `plugins are started by ${shell}, with ${dir} for their input and output`,
  };
}

export class ShellLauncher implements PluginLauncher {
  private shell: ChildProcess | undefined;
  private readonly pending = new Map<string, Pending>();
  private seq = 0;
  private buffered = '';
  private closed = false;

  /** `dir`: a directory of crishim's own; what is in it is the shell's scratch space and gets wiped. */
  constructor(
    private readonly dir: string,
    private readonly shellPath = '/bin/sh',
    private readonly setsidPath = 'setsid',
  ) {}

  launch(bin: string, env: Record<string, string>, stdin: string): PluginProcess {
    const id = String(++this.seq);
    let entry: Pending | undefined;
    const done = new Promise<PluginExit>((resolve, reject) => {
      if (/[\n\0]/.test(bin) || Object.values(env).some((v) => v.includes('\0')))
        throw new Error('a newline or NUL byte in the plugin path or its environment');
      const shell = this.start();
      writeFileSync(
        this.file(id, 'env'),
        Object.entries(env)
          .map(([k, v]) => `export ${k}=${shellQuote(v)}\n`)
          .join(''),
      );
      writeFileSync(this.file(id, 'in'), stdin);
      entry = { resolve, reject, killed: false };
      this.pending.set(id, entry);
      shell.stdin?.write(`${id} ${bin}\n`);
    });
    return {
      done,
      kill: () => {
        if (!entry) return;
        entry.killed = true;
        if (entry.pid) killGroup(entry.pid);
      },
    };
  }

  /** The shell's loop ends at the end of its input. */
  close(): void {
    this.closed = true;
    this.shell?.stdin?.end();
  }

  /** The running shell, started (and its scratch directory emptied) when there is none. */
  private start(): ChildProcess {
    if (this.shell) return this.shell;
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // an empty environment: each plugin gets exactly what its `env` file exports (cniEnv's PATH and
    // CNI_* variables), so the shell needs no PATH fallback of its own
    const shell = spawn(this.shellPath, ['-c', LOOP, 'crishim-cni-launch', this.dir, this.setsidPath], {
      env: {},
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    this.shell = shell;
    this.buffered = '';
    shell.stdout?.setEncoding('utf8');
    shell.stdout?.on('data', (chunk: string) => this.onReplies(chunk));
    shell.stdin?.on('error', () => undefined); // its exit is handled below
    const gone = (why: string): void => {
      if (this.shell !== shell) return;
      this.shell = undefined;
      for (const [id, p] of this.pending) {
        // no one would hear how a plugin of a shell that died ends: stop it, as a timeout would
        // (after close(), what runs is left to finish, as it was when crishim spawned plugins)
        if (p.pid && !this.closed) killGroup(p.pid);
        this.finish(id);
        p.reject(new Error(`the shell that starts CNI plugins ${why}`));
      }
    };
    shell.on('error', (err) => gone(`could not run: ${err.message}`));
    shell.on('exit', (code, signal) => gone(`exited (${signal ?? `code ${String(code)}`})`));
    // idle, it must not keep the daemon's event loop alive (a pending plugin's timeout timer does)
    shell.unref();
    for (const pipe of [shell.stdin, shell.stdout]) (pipe as Socket | null)?.unref();
    return shell;
  }

  private onReplies(chunk: string): void {
    this.buffered += chunk;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const [id, what, value] = this.buffered.slice(0, nl).split(' ');
      this.buffered = this.buffered.slice(nl + 1);
      const p = this.pending.get(id);
      if (!p) continue;
      const n = Number(value);
      if (what === 'pid') {
        p.pid = n;
        if (p.killed) killGroup(n);
      } else if (what === 'exit') {
        const exit: PluginExit = {
          ...fromShellStatus(n),
          stdout: readCapped(this.file(id, 'out')),
          stderr: readCapped(this.file(id, 'err')),
        };
        this.finish(id);
        p.resolve(exit);
      }
    }
  }

  private file(id: string, kind: 'env' | 'in' | 'out' | 'err'): string {
    return path.join(this.dir, `${id}.${kind}`);
  }

  /**
   * Forgets a request and removes its files in libuv's pool: under a pod burst each unlink waits
   * about a millisecond on the filesystem's journal, which on the event loop held up every call.
   */
  private finish(id: string): void {
    this.pending.delete(id);
    // a file is missing when the shell died before it ran the plugin: nothing to remove
    for (const kind of ['env', 'in', 'out', 'err'] as const) unlink(this.file(id, kind), () => undefined);
  }
}

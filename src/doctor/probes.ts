import { execFile } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import type { DockerEngine } from '../docker/engine';
import { lowestOomScoreAdj } from '../docker/oom-score';
import { which } from '../host-binaries';
import { createLogger, type Logger } from '../logging/logger';
import { probeConfDirSync } from '../network/cni-config';
import { socketAnswers } from '../server/socket';
import type { HostProbes, SocketState } from './types';

async function socketState(socketPath: string): Promise<SocketState> {
  let st;
  try {
    st = await fsp.lstat(socketPath);
  } catch {
    return 'absent';
  }
  if (!st.isSocket()) return 'not-a-socket';
  return (await socketAnswers(socketPath)) ? 'live' : 'stale';
}

async function writeError(dir: string): Promise<string | undefined> {
  const file = path.join(dir, `.crishim-doctor-${process.pid}`);
  try {
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    await fsp.writeFile(file, 'ok');
    await fsp.rm(file, { force: true });
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The /proc directories of every process whose command name (comm) is `name`. */
async function processesNamed(name: string, proc: string): Promise<string[]> {
  const out: string[] = [];
  for (const pid of (await fsp.readdir(proc)).filter((n) => /^\d+$/.test(n))) {
    const comm = await fsp.readFile(path.join(proc, pid, 'comm'), 'utf8').catch(() => '');
    if (comm.trim() === name) out.push(path.join(proc, pid));
  }
  return out;
}

/** CapBnd of every process named dockerd (hex in /proc/<pid>/status). */
async function dockerdCapBnd(proc = '/proc'): Promise<bigint[]> {
  const out: bigint[] = [];
  for (const dir of await processesNamed('dockerd', proc)) {
    const status = await fsp.readFile(path.join(dir, 'status'), 'utf8').catch(() => '');
    const m = /^CapBnd:\s*([0-9a-f]+)$/m.exec(status);
    if (m) out.push(BigInt(`0x${m[1]}`));
  }
  return out;
}

/**
 * The command line of every process named kubelet (NUL-separated in /proc/<pid>/cmdline), with
 * a relative `--config` made absolute against the process's working directory, where the
 * kubelet opens it (a unit with WorkingDirectory= and `--config=config.yaml`).
 */
export async function kubeletArgs(proc = '/proc'): Promise<string[][]> {
  const out: string[][] = [];
  for (const dir of await processesNamed('kubelet', proc)) {
    const cmdline = await fsp.readFile(path.join(dir, 'cmdline'), 'utf8').catch(() => '');
    if (!cmdline) continue;
    const args = cmdline.replace(/\0$/, '').split('\0');
    const cwd = await fsp.readlink(path.join(dir, 'cwd')).catch(() => undefined);
    out.push(cwd === undefined ? args : withConfigUnder(args, cwd));
  }
  return out;
}

function withConfigUnder(args: string[], cwd: string): string[] {
  const absolute = (file: string): string => (path.isAbsolute(file) || file === '' ? file : path.resolve(cwd, file));
  return args.map((arg, i) => {
    if (arg.startsWith('--config=')) return `--config=${absolute(arg.slice('--config='.length))}`;
    return i > 0 && args[i - 1] === '--config' ? absolute(arg) : arg;
  });
}

/**
 * What the running kubelet's executable (its /proc exe, whatever PATH says), else the kubelet
 * on PATH, prints for `--version`: `Kubernetes v1.32.1`. Undefined when none answers in 5 s.
 */
export async function kubeletVersion(
  proc = '/proc',
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  const [running] = await processesNamed('kubelet', proc);
  const exe = running ? path.join(running, 'exe') : which('kubelet', env);
  if (!exe) return undefined;
  return new Promise((resolve) => {
    execFile(exe, ['--version'], { timeout: 5000, killSignal: 'SIGKILL' }, (err, stdout) =>
      resolve(err ? undefined : /\bv\d+\.\d+\.\d+\S*/.exec(stdout)?.[0]),
    );
  });
}

/** `iptables -S FORWARD` opens with the policy line `-P FORWARD DROP`; undefined when iptables does not answer. */
function forwardPolicy(): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('iptables', ['-S', 'FORWARD'], { timeout: 5000, killSignal: 'SIGKILL' }, (err, stdout) =>
      resolve(err ? undefined : /^-P FORWARD (\S+)/m.exec(stdout)?.[1]),
    );
  });
}

/** The real host, read with the daemon's own code (CNI probe, oom_score_adj probe, socket check). */
export function hostProbes(docker: DockerEngine, logger: Logger = createLogger('error', 'text')): HostProbes {
  return {
    imagePresent: (ref) =>
      docker.inspectImage(ref).then(
        () => true,
        () => false,
      ),
    registryError: async (ref) => {
      try {
        // GET /distribution/<ref>/json: Docker resolves the manifest in the registry without pulling
        await docker.imageDistribution(ref);
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    },
    cniConfig: (confDir, binDirs) => probeConfDirSync(confDir, binDirs, logger),
    writeError,
    socketState,
    oomScoreFloor: () => lowestOomScoreAdj(-1000),
    dockerdCapBnd: () => dockerdCapBnd(),
    kubeletArgs: () => kubeletArgs(),
    kubeletVersion: () => kubeletVersion(),
    lastCap: async () => Number((await fsp.readFile('/proc/sys/kernel/cap_last_cap', 'utf8')).trim()),
    forwardPolicy,
    readText: (file) => fsp.readFile(file, 'utf8').catch(() => undefined),
    exists: (file) =>
      fsp.access(file).then(
        () => true,
        () => false,
      ),
    which: (bin) => which(bin),
  };
}

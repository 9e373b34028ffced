import type { Duplex } from 'stream';
import type Docker from 'dockerode';
import type { DockerApi } from './client';

/** One `docker exec` with its streams, and a way to kill what it started. */
export interface ExecSession {
  exec: Docker.Exec;
  /** Hijacked connection: stdin goes in; with a tty it carries raw output, else multiplexed frames. */
  stream: Duplex;
  /** Host pid of the exec'd process (0 once it is gone or not started). */
  pid(): Promise<number>;
  /** SIGKILLs the exec'd process: Docker has no API to stop an exec. */
  kill(): Promise<void>;
  exitCode(): Promise<number>;
}

export interface ExecOptions {
  cmd: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  signal?: AbortSignal;
}

export async function startExec(docker: DockerApi, containerId: string, o: ExecOptions): Promise<ExecSession> {
  const exec = await docker.getContainer(containerId).exec({
    Cmd: o.cmd,
    AttachStdin: o.stdin,
    AttachStdout: o.stdout,
    AttachStderr: o.stderr,
    Tty: o.tty,
  });
  const stream = (await exec.start({ hijack: true, stdin: o.stdin, Tty: o.tty })) as unknown as Duplex;
  const pid = async (): Promise<number> => {
    try {
      const info = await exec.inspect();
      return info.Running ? info.Pid : 0;
    } catch {
      return 0;
    }
  };
  return {
    exec,
    stream,
    pid,
    async kill() {
      const p = await pid();
      if (p > 0) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    },
    async exitCode() {
      const info = await exec.inspect();
      return info.ExitCode ?? 0;
    },
  };
}

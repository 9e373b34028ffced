/**
 * Graceful shutdown: SIGTERM lets calls in flight finish, then the daemon exits
 * 0 and removes its socket.
 */
import { existsSync } from 'fs';
import type { ChildProcess } from 'child_process';
import { BUSYBOX, call, docker, podConfig, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(120_000);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function exitOf(proc: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null)
      return resolve({ code: proc.exitCode, signal: proc.signalCode });
    proc.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

/** Waits until Docker has an exec running in the container, i.e. the call reached the daemon and Docker. */
async function execRunning(containerId: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ids = (await docker.getContainer(containerId).inspect()).ExecIDs ?? [];
    for (const id of ids) {
      if ((await docker.getExec(id).inspect()).Running) return;
    }
    await sleep(50);
  }
  throw new Error(`no exec ever ran in ${containerId}`);
}

describe('graceful shutdown', () => {
  let h: Crishim | undefined;
  afterEach(async () => {
    await teardown(h);
    h = undefined;
  });

  it('lets an ExecSync in flight finish on SIGTERM, exits 0 and removes its socket', async () => {
    h = await startCrishim({ subnetIndex: 237, args: ['--network-plugin=none'] });
    const config = podConfig('shutdown');
    const { pod_sandbox_id: pod } = await call(h.runtime, 'RunPodSandbox', { config });
    const { container_id: ctr } = await call(h.runtime, 'CreateContainer', {
      pod_sandbox_id: pod,
      config: { metadata: { name: 'sleeper' }, image: { image: BUSYBOX }, command: ['sleep', '100000'] },
      sandbox_config: config,
    });
    await call(h.runtime, 'StartContainer', { container_id: ctr });

    const slow = call(h.runtime, 'ExecSync', {
      container_id: ctr,
      cmd: ['sh', '-c', 'sleep 2; echo finished'],
      timeout: '0',
    });
    await execRunning(ctr);
    const exited = exitOf(h.proc);
    h.proc.kill('SIGTERM');

    const res = await slow;
    expect(res.exit_code).toBe(0);
    expect(String(res.stdout)).toBe('finished\n');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(existsSync(h.socket)).toBe(false);

    // back up on the same state to remove the pod the CRI way
    await h.relaunch();
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
  });
});

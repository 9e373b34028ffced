import { promises as fsp } from 'fs';
import * as path from 'path';
import { status } from '@grpc/grpc-js';
import {
  BUSYBOX,
  call,
  checkpointFiles,
  codeOf,
  containersOfPod,
  docker,
  reservedIps,
  runLoggedPod,
  startCrishim,
  teardown,
  type Crishim,
  type LoggedPod,
} from './harness';

jest.setTimeout(180_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 202 });
});
afterAll(() => teardown(h));

type Pod = LoggedPod;
const runPod = (name: string): Promise<Pod> => runLoggedPod(h, name);

async function removePod(pod: Pod): Promise<void> {
  await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id });
  await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id });
}

async function createContainer(pod: Pod, name: string, extra: Record<string, unknown>): Promise<string> {
  const res = await call(h.runtime, 'CreateContainer', {
    pod_sandbox_id: pod.id,
    config: {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX },
      log_path: `${name}/0.log`,
      labels: { container: name },
      annotations: { 'e2e/container': name },
      ...extra,
    },
    sandbox_config: pod.config,
  });
  return res.container_id;
}

async function waitExited(id: string, timeoutMs = 60_000): Promise<NonNullable<Awaited<ReturnType<typeof statusOf>>>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await statusOf(id);
    if (s?.state === 'CONTAINER_EXITED') return s;
    if (Date.now() > deadline) throw new Error(`container ${id} did not exit; state ${s?.state}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function statusOf(id: string) {
  return (await call(h.runtime, 'ContainerStatus', { container_id: id })).status;
}

async function waitForFile(file: string, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await fsp.readFile(file, 'utf8').catch(() => '');
    if (pattern.test(text)) return text;
    if (Date.now() > deadline) throw new Error(`${file} never matched ${pattern}; it holds: ${text.slice(-500)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('a two-container pod', () => {
  it('shares the pod network, sees env and mounts, reports exit codes and writes CRI logs', async () => {
    const pod = await runPod('twins');
    const shared = path.join(h.dir, `shared-${Date.now()}`);
    await fsp.mkdir(shared);
    await fsp.writeFile(path.join(shared, 'from-host'), 'host-data\n');
    const mounts = [{ container_path: '/data', host_path: shared }];

    const server = await createContainer(pod, 'server', {
      command: ['sh', '-c'],
      // busybox nc quits as soon as its own stdin ends, maybe before the client's bytes are
      // read; a FIFO held open read-write gives it a stdin that never ends
      args: [
        'echo "env=$GREETING"; cat /data/from-host; mkfifo /tmp/hold; exec 3<>/tmp/hold; nc -l -p 7777 <&3 > /data/received; echo got-it',
      ],
      envs: [{ key: 'GREETING', value: Buffer.from('hi there') }],
      mounts,
    });
    const client = await createContainer(pod, 'client', {
      command: [
        'sh',
        '-c',
        'for i in $(seq 1 100); do echo hello-pod | nc 127.0.0.1 7777 && exit 3; sleep 0.2; done; exit 1',
      ],
    });
    expect((await statusOf(server))?.state).toBe('CONTAINER_CREATED');
    await call(h.runtime, 'StartContainer', { container_id: server });
    await call(h.runtime, 'StartContainer', { container_id: client });

    // the client connected over the pod's localhost, then exited 3 on purpose
    const clientStatus = await waitExited(client);
    expect(clientStatus.exit_code).toBe(3);
    expect(clientStatus.reason).toBe('Error');
    const serverStatus = await waitExited(server);
    expect(serverStatus.exit_code).toBe(0);
    expect(serverStatus.reason).toBe('Completed');
    expect(await fsp.readFile(path.join(shared, 'received'), 'utf8')).toBe('hello-pod\n');
    expect(BigInt(serverStatus.finished_at ?? '0')).toBeGreaterThan(BigInt(serverStatus.started_at ?? '0'));
    expect(serverStatus.mounts).toEqual([
      expect.objectContaining({ container_path: '/data', host_path: shared, readonly: false }),
    ]);
    expect(serverStatus.log_path).toBe(path.join(pod.logDir, 'server', '0.log'));
    expect(serverStatus.labels).toEqual({ container: 'server' });
    expect(serverStatus.annotations).toEqual({ 'e2e/container': 'server' });
    expect(serverStatus.metadata).toEqual({ name: 'server', attempt: 0 });
    const image = await docker.getImage(BUSYBOX).inspect();
    expect(serverStatus.image_ref).toBe(image.Id);

    // CRI log format at the requested path
    const log = await waitForFile(serverStatus.log_path ?? '', /got-it/);
    const lines = log.trimEnd().split('\n');
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z (stdout|stderr) [PF] /);
    expect(lines.map((l) => l.split(' ').slice(3).join(' '))).toEqual(['env=hi there', 'host-data', 'got-it']);

    // list filters
    const inPod = await call(h.runtime, 'ListContainers', { filter: { pod_sandbox_id: pod.id } });
    expect(inPod.containers?.map((c) => c.id).sort()).toEqual([client, server].sort());
    const byLabel = await call(h.runtime, 'ListContainers', {
      filter: { pod_sandbox_id: pod.id, label_selector: { container: 'client' } },
    });
    expect(byLabel.containers?.map((c) => c.id)).toEqual([client]);
    const exited = await call(h.runtime, 'ListContainers', {
      filter: { pod_sandbox_id: pod.id, state: { state: 'CONTAINER_RUNNING' } },
    });
    expect(exited.containers).toEqual([]);

    // removing the sandbox removes its containers and their logs
    await removePod(pod);
    expect(await containersOfPod(pod.uid)).toEqual([]);
    await expect(fsp.stat(serverStatus.log_path ?? '')).rejects.toThrow();
    expect((await codeOf(call(h.runtime, 'ContainerStatus', { container_id: server }))).code).toBe(status.NOT_FOUND);
  });
});

describe('container lifecycle details', () => {
  let pod: Pod;
  beforeAll(async () => {
    pod = await runPod('details');
  });
  afterAll(async () => {
    await removePod(pod);
    expect(await containersOfPod(pod.uid)).toEqual([]);
  });

  it('reports OOMKilled when the memory limit is exceeded', async () => {
    const id = await createContainer(pod, 'oom', {
      command: ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=128M', 'count=1'],
      linux: { resources: { memory_limit_in_bytes: String(16 * 1024 * 1024) } },
    });
    await call(h.runtime, 'StartContainer', { container_id: id });
    const s = await waitExited(id);
    expect(s.reason).toBe('OOMKilled');
    expect(s.exit_code).toBe(137);
    expect(s.resources?.linux?.memory_limit_in_bytes).toBe(String(16 * 1024 * 1024));
  });

  it('kills a container that ignores SIGTERM once the stop timeout passes', async () => {
    const id = await createContainer(pod, 'stubborn', {
      command: ['sh', '-c', "trap '' TERM; echo trapped; while true; do sleep 1; done"],
    });
    await call(h.runtime, 'StartContainer', { container_id: id });
    await waitForFile(path.join(pod.logDir, 'stubborn', '0.log'), /trapped/);
    const began = Date.now();
    await call(h.runtime, 'StopContainer', { container_id: id, timeout: '2' });
    const took = Date.now() - began;
    // the grace period was honoured (not an immediate kill), then SIGKILL came without Docker's 10 s default
    expect(took).toBeGreaterThanOrEqual(1500);
    expect(took).toBeLessThan(15_000);
    const s = await statusOf(id);
    expect(s?.state).toBe('CONTAINER_EXITED');
    expect(s?.exit_code).toBe(137); // SIGKILL, not a graceful exit
    // stopping again is fine
    await call(h.runtime, 'StopContainer', { container_id: id, timeout: '2' });

    // timeout 0 kills at once
    const other = await createContainer(pod, 'stubborn0', {
      command: ['sh', '-c', "trap '' TERM; echo trapped; while true; do sleep 1; done"],
    });
    await call(h.runtime, 'StartContainer', { container_id: other });
    await waitForFile(path.join(pod.logDir, 'stubborn0', '0.log'), /trapped/);
    const began0 = Date.now();
    await call(h.runtime, 'StopContainer', { container_id: other, timeout: '0' });
    expect(Date.now() - began0).toBeLessThan(5000);
    const s0 = await statusOf(other);
    expect(s0?.state).toBe('CONTAINER_EXITED');
    expect(s0?.exit_code).toBe(137);
  });

  // Docker cuts a line without newline into 16 KiB records and flushes what is left at exit;
  // with a tty its logs stream has no framing, so record boundaries come from those sizes
  for (const tty of [false, true]) {
    it(`reassembles a 40 KiB line and a last line without newline exactly (tty=${tty})`, async () => {
      const name = tty ? 'longtty' : 'longplain';
      const id = await createContainer(pod, name, {
        command: ['sh', '-c', "head -c 40960 /dev/zero | tr '\\0' x; echo; printf tail"],
        tty,
      });
      await call(h.runtime, 'StartContainer', { container_id: id });
      await waitExited(id);
      const text = await waitForFile(path.join(pod.logDir, name, '0.log'), /stdout P tail\n$/);
      const entries = text.slice(0, -1).split('\n');
      const parsed = entries.map((e) => /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z) stdout ([PF]) (.*)$/s.exec(e));
      expect(parsed.every(Boolean)).toBe(true);
      // 40961 (or 40962 with the pty's \r) bytes: two 16 KiB pieces, the rest, then the unterminated tail
      expect(parsed.map((p) => p?.[2])).toEqual(['P', 'P', 'F', 'P']);
      const content = parsed.map((p) => (p?.[3] ?? '') + (p?.[2] === 'F' ? '\n' : '')).join('');
      const eol = tty ? '\r\n' : '\n';
      expect(content).toBe('x'.repeat(40960) + eol + 'tail');
      expect(content).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
      await call(h.runtime, 'RemoveContainer', { container_id: id });
    });
  }

  it('keeps every log line across a rotation and ReopenContainerLog', async () => {
    const id = await createContainer(pod, 'chatty', {
      command: ['sh', '-c', 'i=0; while [ $i -lt 300 ]; do echo line-$i; i=$((i+1)); sleep 0.01; done; sleep 3600'],
    });
    await call(h.runtime, 'StartContainer', { container_id: id });
    const file = path.join(pod.logDir, 'chatty', '0.log');
    await waitForFile(file, /line-50\n/);
    await fsp.rename(file, `${file}.1`);
    await call(h.runtime, 'ReopenContainerLog', { container_id: id });
    await waitForFile(file, /line-299\n/);
    const all = (await fsp.readFile(`${file}.1`, 'utf8')) + (await fsp.readFile(file, 'utf8'));
    const got = all
      .trimEnd()
      .split('\n')
      .map((l) => l.split(' ').slice(3).join(' '));
    expect(got).toEqual(Array.from({ length: 300 }, (_, i) => `line-${i}`));
    await call(h.runtime, 'StopContainer', { container_id: id, timeout: '0' });
    // not running any more: reopening is refused
    expect((await codeOf(call(h.runtime, 'ReopenContainerLog', { container_id: id }))).code).toBe(
      status.FAILED_PRECONDITION,
    );
  });

  it('appends to its log when a container is started again, and stops writing once removed', async () => {
    const id = await createContainer(pod, 'again', {
      command: ['sh', '-c', 'echo run-$(cat /proc/uptime | cut -d" " -f1)'],
    });
    const file = path.join(pod.logDir, 'again', '0.log');
    await call(h.runtime, 'StartContainer', { container_id: id });
    await waitExited(id);
    await waitForFile(file, /run-/);
    await call(h.runtime, 'StartContainer', { container_id: id });
    const log = await waitForFile(file, /run-.*\n.*run-/);
    expect(log.trimEnd().split('\n')).toHaveLength(2);
    await call(h.runtime, 'RemoveContainer', { container_id: id });
    await expect(fsp.stat(file)).rejects.toThrow();
  });

  it('applies UpdateContainerResources through Docker', async () => {
    const id = await createContainer(pod, 'updatable', { command: ['sleep', '3600'] });
    await call(h.runtime, 'StartContainer', { container_id: id });
    const memory = async () => (await call(h.runtime, 'ContainerStats', { container_id: id })).stats?.memory;
    // no limit yet, and the stats path keeps what it read of the limit (stats/files.ts readKept)
    expect((await memory())?.available_bytes ?? null).toBeNull();
    await call(h.runtime, 'UpdateContainerResources', {
      container_id: id,
      linux: { cpu_shares: '256', memory_limit_in_bytes: String(64 * 1024 * 1024) },
    });
    const info = await docker.getContainer(id).inspect();
    expect(info.HostConfig.CpuShares).toBe(256);
    expect(info.HostConfig.Memory).toBe(64 * 1024 * 1024);
    // the update is seen at the next stats call past the collector's 500 ms reuse of a reading,
    // not when the kept limit expires (30 s)
    await new Promise((r) => setTimeout(r, 600));
    const after = await memory();
    expect(Number(after?.available_bytes?.value)).toBe(64 * 1024 * 1024 - Number(after?.working_set_bytes?.value));
    await call(h.runtime, 'RemoveContainer', { container_id: id });
    await call(h.runtime, 'RemoveContainer', { container_id: id });
    expect((await codeOf(call(h.runtime, 'ContainerStatus', { container_id: id }))).code).toBe(status.NOT_FOUND);
  });

  it('refuses bad container requests with the field named', async () => {
    const noImage = await codeOf(
      call(h.runtime, 'CreateContainer', {
        pod_sandbox_id: pod.id,
        config: { metadata: { name: 'x' } },
        sandbox_config: pod.config,
      }),
    );
    expect(noImage.code).toBe(status.INVALID_ARGUMENT);
    expect(noImage.details).toMatch(/image/);
    const escape = await codeOf(createContainer(pod, 'escape', { log_path: '../../etc/evil.log' }));
    expect(escape.code).toBe(status.INVALID_ARGUMENT);
    const missing = await codeOf(
      createContainer(pod, 'nomount', { mounts: [{ container_path: '/x', host_path: '/no/such/path' }] }),
    );
    expect(missing.code).toBe(status.INVALID_ARGUMENT);
    expect(missing.details).toMatch(/does not exist/);
    const noSandbox = await codeOf(
      call(h.runtime, 'CreateContainer', {
        pod_sandbox_id: 'e'.repeat(64),
        config: { metadata: { name: 'x' }, image: { image: BUSYBOX } },
      }),
    );
    expect(noSandbox.code).toBe(status.NOT_FOUND);
    expect((await codeOf(call(h.runtime, 'StartContainer', { container_id: 'e'.repeat(64) }))).code).toBe(
      status.NOT_FOUND,
    );
  });
});

describe('a pod removed without a stop', () => {
  it('loses its running and exited containers, their logs, its IP and its checkpoint', async () => {
    const pod = await runPod('unstopped');
    const ip = (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod.id })).status?.network?.ip ?? '';
    expect(await reservedIps(h.cni.ipamDir)).toContain(ip);
    const chatty = { command: ['sh', '-c', 'i=0; while :; do echo $i; i=$((i+1)); sleep 0.05; done'] };
    const running = [await createContainer(pod, 'a', chatty), await createContainer(pod, 'b', chatty)];
    const done = await createContainer(pod, 'done', { command: ['echo', 'bye'] });
    for (const id of [...running, done]) await call(h.runtime, 'StartContainer', { container_id: id });
    await waitExited(done);
    const logs = await Promise.all([...running, done].map(async (id) => (await statusOf(id))?.log_path ?? ''));
    for (const log of logs) await waitForFile(log, /./);

    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id });
    expect(await containersOfPod(pod.uid)).toEqual([]);
    for (const log of logs) await expect(fsp.stat(log)).rejects.toThrow();
    expect(await reservedIps(h.cni.ipamDir)).not.toContain(ip);
    expect(await checkpointFiles(h)).not.toContain(`${pod.id}.json`);
    expect((await codeOf(call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod.id }))).code).toBe(status.NOT_FOUND);
    // twice is fine
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id });
  });
});

describe('a stopped pod', () => {
  it('cannot get new containers', async () => {
    const pod = await runPod('stopped');
    const id = await createContainer(pod, 'early', { command: ['sleep', '3600'] });
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id });
    expect((await codeOf(createContainer(pod, 'late', { command: ['true'] }))).code).toBe(status.FAILED_PRECONDITION);
    expect((await codeOf(call(h.runtime, 'StartContainer', { container_id: id }))).code).toBe(
      status.FAILED_PRECONDITION,
    );
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id });
    expect(await containersOfPod(pod.uid)).toEqual([]);
  });
});

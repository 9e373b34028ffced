/**
 * CRI logs against the real Docker: numbered lines, each checked to arrive exactly once and
 * in order, through Docker's json-file rotations (2 MiB files here, so a few MB rotate many
 * times; 8 of them, so a copy starved of CPU on a loaded machine still has 16 MB of slack),
 * a kill -9 of crishim, kubelet-style rotations and a tty.
 */
import { promises as fsp } from 'fs';
import * as path from 'path';
import { BUSYBOX, call, runLoggedPod, startCrishim, teardown, type Crishim, type LoggedPod } from './harness';

jest.setTimeout(120_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({
    subnetIndex: 251,
    args: ['--container-log-max-size', '2m', '--container-log-max-files', '8'],
  });
});
afterAll(() => teardown(h));

type Pod = LoggedPod;

const pods: Pod[] = [];
afterAll(async () => {
  for (const p of pods) {
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: p.id }).catch(() => undefined);
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: p.id }).catch(() => undefined);
  }
});

async function runPod(name: string): Promise<Pod> {
  // host network: no CNI work, the logs are what is tested here
  const pod = await runLoggedPod(h, name, {
    linux: { security_context: { namespace_options: { network: 'NODE' } } },
  });
  pods.push(pod);
  return pod;
}

/** Creates and starts a busybox container running `script`; returns its id and CRI log path. */
async function runScript(pod: Pod, name: string, script: string, tty = false): Promise<{ id: string; file: string }> {
  const { container_id: id } = await call(h.runtime, 'CreateContainer', {
    pod_sandbox_id: pod.id,
    config: {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX },
      command: ['sh', '-c', script],
      log_path: `${name}/0.log`,
      tty,
    },
    sandbox_config: pod.config,
  });
  await call(h.runtime, 'StartContainer', { container_id: id });
  return { id, file: path.join(pod.logDir, name, '0.log') };
}

interface Entry {
  stream: string;
  tag: string;
  content: string;
}

const ENTRY = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z) (stdout|stderr) ([PF]) (.*)$/s; // s: a tty line ends in \r

/** Lines rebuilt from CRI entries (P pieces joined up to their F), per stream; throws on a malformed entry. */
function linesOf(text: string, stream = 'stdout'): string[] {
  const out: string[] = [];
  let partial = '';
  for (const raw of text.split('\n')) {
    if (raw === '') continue;
    const m = ENTRY.exec(raw);
    if (!m) throw new Error(`malformed CRI entry: ${raw.slice(0, 120)}`);
    const e: Entry = { stream: m[2], tag: m[3], content: m[4] };
    if (e.stream !== stream) continue;
    partial += e.content;
    if (e.tag === 'F') {
      out.push(partial);
      partial = '';
    }
  }
  if (partial) out.push(partial);
  return out;
}

/** A short account of how `lines` differ from `prefix1..prefixN` (empty when they match exactly). */
function exactlyOnce(lines: string[], n: number, line: (i: number) => string = (i) => `n=${i}`): string {
  if (lines.length === n && lines.every((l, i) => l === line(i + 1))) return '';
  const seen = new Map<string, number>();
  for (const l of lines) seen.set(l, (seen.get(l) ?? 0) + 1);
  let missing = 0;
  let dups = 0;
  for (let i = 1; i <= n; i++) {
    const c = seen.get(line(i)) ?? 0;
    if (c === 0) missing += 1;
    if (c > 1) dups += c - 1;
  }
  const firstBad = lines.findIndex((l, i) => l !== line(i + 1));
  return `${lines.length} lines for ${n}: ${missing} missing, ${dups} duplicated, first difference at ${firstBad} (${JSON.stringify(lines[firstBad])})`;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const exited = async (id: string): Promise<boolean> =>
  (await call(h.runtime, 'ContainerStatus', { container_id: id })).status?.state === 'CONTAINER_EXITED';

/** Waits for the container's exit, then for `last` to be copied; returns the whole CRI text (rotated files first). */
async function finalText(id: string, files: string[], last: RegExp): Promise<string> {
  await waitFor(`container ${id} to exit`, () => exited(id));
  let text = '';
  await waitFor(`${last} in ${files[files.length - 1]}`, async () => {
    text = (await Promise.all(files.map((f) => fsp.readFile(f, 'utf8').catch(() => '')))).join('');
    return last.test(text);
  });
  // let a copy that wrongly went on (a duplicate tail) show itself
  await new Promise((r) => setTimeout(r, 500));
  return (await Promise.all(files.map((f) => fsp.readFile(f, 'utf8').catch(() => '')))).join('');
}

async function lossWarnings(): Promise<string[]> {
  return (await fsp.readFile(h.logFile, 'utf8')).split('\n').filter((l) => /were lost|skipped an unterminated/.test(l));
}

describe('container logs, exactly once and in order', () => {
  let pod: Pod;
  beforeAll(async () => {
    pod = await runPod('logs');
  });

  it('a 300,000-line burst across many json-file rotations', async () => {
    const n = 300_000;
    const { id, file } = await runScript(pod, 'burst', `seq 1 ${n} | sed 's/^/n=/'`);
    const text = await finalText(id, [file], new RegExp(`stdout F n=${n}\n$`));
    expect(exactlyOnce(linesOf(text), n)).toBe('');
    // Docker did rotate: only the last few MiB are still on disk
    const info = await (await import('./harness')).docker.getContainer(id).inspect();
    const jsonFiles = (await fsp.readdir(path.dirname(info.LogPath))).filter((f) => f.startsWith(`${id}-json.log`));
    expect(jsonFiles.length).toBe(8);
  });

  it('a steady stream across several rotations', async () => {
    // 40 rounds of 2,500 lines (~190 KB of json-file) every 50 ms: several 2 MiB rotations
    const rounds = 40;
    const per = 2500;
    const { id, file } = await runScript(
      pod,
      'steady',
      `i=0; while [ $i -lt ${rounds} ]; do seq $((i*${per}+1)) $((i*${per}+${per})) | sed 's/^/n=/'; i=$((i+1)); sleep 0.05; done`,
    );
    const text = await finalText(id, [file], new RegExp(`stdout F n=${rounds * per}\n$`));
    expect(exactlyOnce(linesOf(text), rounds * per)).toBe('');
  });

  it('crishim killed -9 mid-stream and started again', async () => {
    const rounds = 60;
    const per = 2500;
    const { id, file } = await runScript(
      pod,
      'killed',
      `i=0; while [ $i -lt ${rounds} ]; do seq $((i*${per}+1)) $((i*${per}+${per})) | sed 's/^/n=/'; i=$((i+1)); sleep 0.05; done`,
    );
    await waitFor(
      'the copy to be under way',
      async () =>
        (await fsp.stat(file).catch(() => undefined))?.size !== undefined && (await fsp.stat(file)).size > 1_000_000,
    );
    await h.restart({ kill: true });
    const text = await finalText(id, [file], new RegExp(`stdout F n=${rounds * per}\n$`));
    expect(exactlyOnce(linesOf(text), rounds * per)).toBe('');
  });

  it('kubelet-style rotations (rename + ReopenContainerLog) mid-stream', async () => {
    const rounds = 40;
    const per = 1000;
    const { id, file } = await runScript(
      pod,
      'rotated',
      `i=0; while [ $i -lt ${rounds} ]; do seq $((i*${per}+1)) $((i*${per}+${per})) | sed 's/^/n=/'; i=$((i+1)); sleep 0.05; done`,
    );
    const rotated: string[] = [];
    for (const at of [5000, 20_000]) {
      await waitFor(`line ${at}`, async () => (await fsp.readFile(file, 'utf8').catch(() => '')).includes(`n=${at}\n`));
      const to = `${file}.${rotated.length + 1}`;
      await fsp.rename(file, to);
      rotated.push(to);
      await call(h.runtime, 'ReopenContainerLog', { container_id: id });
    }
    const text = await finalText(id, [...rotated, file], new RegExp(`stdout F n=${rounds * per}\n$`));
    expect(exactlyOnce(linesOf(text), rounds * per)).toBe('');
    // each file got a share: the reopen did move the copy to the new file
    for (const f of [...rotated, file]) expect((await fsp.stat(f)).size).toBeGreaterThan(0);
  });

  it('a tty container', async () => {
    const n = 50_000;
    const { id, file } = await runScript(pod, 'tty', `seq 1 ${n} | sed 's/^/n=/'`, true);
    const text = await finalText(id, [file], new RegExp(`stdout F n=${n}\r\n$`));
    // the pty turns each newline into \r\n
    expect(exactlyOnce(linesOf(text), n, (i) => `n=${i}\r`)).toBe('');
  });

  it('40 KiB lines between numbered ones, cut in 16 KiB pieces and put back together', async () => {
    const n = 20;
    const big = 'x'.repeat(40_960);
    const { id, file } = await runScript(
      pod,
      'long',
      `i=1; while [ $i -le ${n} ]; do echo n=$i; head -c 40960 /dev/zero | tr '\\0' x; echo; i=$((i+1)); done`,
    );
    const text = await finalText(id, [file], new RegExp(`stdout F x+\n$`));
    const lines = linesOf(text);
    expect(exactlyOnce(lines, 2 * n, (i) => (i % 2 === 1 ? `n=${(i + 1) / 2}` : big))).toBe('');
    // three pieces per long line: P, P, F
    const tags = text
      .split('\n')
      .filter((l) => / stdout [PF] x/.test(l))
      .map((l) => l.split(' ')[2]);
    expect(tags).toEqual(Array.from({ length: n }, () => ['P', 'P', 'F']).flat());
  });

  it('warned about no loss along the way', async () => {
    expect(await lossWarnings()).toEqual([]);
  });
});

describe('what a reader sees right after StartContainer and after EXITED', () => {
  it('finds the CRI log file as soon as StartContainer answers', async () => {
    const pod = await runPod('early');
    const { file } = await runScript(pod, 'early', 'sleep 5; echo late');
    // no waiting: the kubelet and critest open the file right after the answer
    await expect(fsp.stat(file)).resolves.toBeTruthy();
  });

  it('has the whole output of a container that exited at once when ContainerStatus says EXITED', async () => {
    const pod = await runPod('quick');
    const { id, file } = await runScript(pod, 'quick', 'seq 1 200 | sed s/^/q-/');
    let state = '';
    for (let i = 0; i < 100 && state !== 'CONTAINER_EXITED'; i++) {
      state = (await call(h.runtime, 'ContainerStatus', { container_id: id })).status?.state ?? '';
      if (state !== 'CONTAINER_EXITED') await new Promise((r) => setTimeout(r, 50));
    }
    expect(state).toBe('CONTAINER_EXITED');
    // read at once, as critest does after seeing EXITED
    const lines = linesOf(await fsp.readFile(file, 'utf8'));
    expect(lines).toEqual(Array.from({ length: 200 }, (_, i) => `q-${i + 1}`));
  });
});

describe('a container Docker cannot start', () => {
  it('leaves no CRI log file, log directory or saved log position behind', async () => {
    const pod = await runPod('nostart');
    const { container_id: id } = await call(h.runtime, 'CreateContainer', {
      pod_sandbox_id: pod.id,
      config: {
        metadata: { name: 'nostart', attempt: 0 },
        image: { image: BUSYBOX },
        command: ['/no/such/binary'],
        log_path: 'nostart/0.log',
      },
      sandbox_config: pod.config,
    });
    await expect(call(h.runtime, 'StartContainer', { container_id: id })).rejects.toThrow(
      /no\/such\/binary|no such file/i,
    );
    await expect(fsp.stat(path.join(pod.logDir, 'nostart'))).rejects.toThrow(/ENOENT/);
    const saved = await fsp.readdir(path.join(h.dir, 'root', 'container-logs')).catch(() => []);
    expect(saved.filter((f) => f.includes(id))).toEqual([]);
  });
});

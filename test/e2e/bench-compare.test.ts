import { execFileSync, spawnSync } from 'child_process';
import * as path from 'path';
import { call, REPO, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(300_000);
// the bench runs synchronously: a hang must end in a failed test before jest's own limit
const BENCH_LIMIT_MS = 240_000;

// the comparison needs a second CRI runtime; a second crishim is one any machine here has
let other: Crishim | undefined;
const BENCH = path.join(REPO, 'bench', 'dist', 'bench', 'bench.js');
beforeAll(async () => {
  other = await startCrishim({ subnetIndex: 219 });
  execFileSync('npx', ['tsc', '-p', 'bench/tsconfig.json'], { cwd: REPO, stdio: 'pipe' });
});
afterAll(() => teardown(other));

/** The sandbox ids a runtime lists: it shares this Docker, so pods left by earlier processes count too. */
async function podIds(h: Crishim): Promise<Set<string>> {
  return new Set((await call(h.runtime, 'ListPodSandbox', {})).items.map((p: { id: string }) => p.id));
}

/** What the bench left behind: the pods listed now that were not listed before it ran. */
function newPods(before: Set<string>, now: Set<string>): string[] {
  return [...now].filter((id) => !before.has(id));
}

it('runs the kubelet load and the lifecycle against another CRI endpoint and tables it beside crishim', async () => {
  const h = other as Crishim;
  const before = await podIds(h);
  const out = execFileSync(
    process.execPath,
    [BENCH, '--smoke', '--only=kubelet-load,lifecycle', `--compare=unix://${h.socket}:other-crishim:${h.proc.pid}`],
    { cwd: REPO, encoding: 'utf8', timeout: BENCH_LIMIT_MS, killSignal: 'SIGKILL' },
  );
  process.stdout.write(out);
  const num = '[\\d.]+';
  // a row of its own with every figure measured, no failed call, and crishim's ratios to it
  expect(out).toMatch(
    new RegExp(
      `\\| other-crishim +\\| ${num} % +\\| ${num} % +\\| ${num} % +\\| ${num} MiB \\(anon ${num}\\) +\\| ${num} / ${num} MiB +\\| ${num} ms / ${num} ms +\\| ${num} ms / ${num} ms +\\| 0 +\\|`,
    ),
  );
  expect(out).toMatch(
    new RegExp(
      `\\| crishim / other-crishim +\\| (${num}|-) +\\| (${num}|-) +\\| (${num}|-) +\\| ${num} +\\| ${num} +\\| ${num} +\\| ${num} +\\|`,
    ),
  );
  // both crishims answer every stats call: nothing left out of the other's round
  expect(out).not.toMatch(/stats round without/);
  expect(out).toMatch(new RegExp(`\\| StopPodSandbox p50 +\\| ${num} ms +\\| ${num} ms +\\| ${num} +\\|`));
  // both drive dockerd: both its CPU and theirs are counted per pod, with the ratio
  expect(out).toMatch(new RegExp(`\\| runtime \\+ dockerd CPU per pod +\\| ${num} ms +\\| ${num} ms +\\| ${num} +\\|`));
  // the bench removed every pod it made through the other runtime
  expect(newPods(before, await podIds(h))).toEqual([]);
});

it('stops before any section when a compared runtime cannot run the load pod', async () => {
  // a sandbox image from a registry that refuses connections: RunPodSandbox fails on this runtime
  const image = '127.0.0.1:9/crishim-test/absent:none';
  const broken = await startCrishim({ subnetIndex: 220, args: ['--pod-infra-container-image', image] });
  try {
    const before = await podIds(broken);
    const run = spawnSync(
      process.execPath,
      [BENCH, '--smoke', '--only=kubelet-load', `--compare=unix://${broken.socket}:broken-crishim:${broken.proc.pid}`],
      { cwd: REPO, encoding: 'utf8', timeout: BENCH_LIMIT_MS, killSignal: 'SIGKILL' },
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("--compare broken-crishim: cannot run the load's pod:");
    expect(run.stderr).toContain(image);
    // the run ended there: its report is printed only once every section is done
    expect(run.stdout).toBe('');
    expect(newPods(before, await podIds(broken))).toEqual([]);
  } finally {
    await teardown(broken);
  }
});

it('removes the pod whose container step failed and names the runtime', async () => {
  // a container image no store here has: RunPodSandbox succeeds, CreateContainer fails
  const image = 'crishim-test/absent:none';
  const h = other as Crishim;
  const before = await podIds(h);
  const run = spawnSync(
    process.execPath,
    [BENCH, '--smoke', '--only=kubelet-load', `--compare=unix://${h.socket}:other-crishim:${h.proc.pid}`],
    {
      cwd: REPO,
      encoding: 'utf8',
      timeout: BENCH_LIMIT_MS,
      killSignal: 'SIGKILL',
      env: { ...process.env, CRISHIM_BENCH_IMAGE: image },
    },
  );
  expect(run.status).toBe(1);
  expect(run.stderr).toContain("--compare other-crishim: cannot run the load's pod:");
  expect(run.stderr).toContain(image);
  // the sandbox made before the failed step was removed, and its removal did not fail
  expect(run.stderr).not.toContain('failed too');
  expect(newPods(before, await podIds(h))).toEqual([]);
});

import { execFileSync } from 'child_process';
import * as path from 'path';
import { call, REPO, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(300_000);

// the comparison needs a second CRI runtime; a second crishim is one any machine here has
let other: Crishim | undefined;
beforeAll(async () => {
  other = await startCrishim({ subnetIndex: 219 });
});
afterAll(() => teardown(other));

it('runs the kubelet load and the lifecycle against another CRI endpoint and tables it beside crishim', async () => {
  const h = other as Crishim;
  // the other crishim shares this Docker: pods some earlier process left behind are in its list too
  const before = new Set((await call(h.runtime, 'ListPodSandbox', {})).items.map((p: { id: string }) => p.id));
  execFileSync('npx', ['tsc', '-p', 'bench/tsconfig.json'], { cwd: REPO, stdio: 'pipe' });
  const out = execFileSync(
    process.execPath,
    [
      path.join(REPO, 'bench', 'dist', 'bench', 'bench.js'),
      '--smoke',
      '--only=kubelet-load,lifecycle',
      `--compare=unix://${h.socket}:other-crishim:${h.proc.pid}`,
    ],
    { cwd: REPO, encoding: 'utf8' },
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
  expect(out).toMatch(new RegExp(`\\| StopPodSandbox +\\| ${num} ms +\\| ${num} ms +\\| ${num} +\\|`));
  // the bench removed every pod it made through the other runtime
  const { items } = await call(h.runtime, 'ListPodSandbox', {});
  expect(items.filter((p: { id: string }) => !before.has(p.id))).toEqual([]);
});

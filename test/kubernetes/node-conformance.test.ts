/**
 * Kubernetes' own e2e specs tagged [NodeConformance] (the node-level behaviour every runtime must
 * have), run by ginkgo from KUBE_BIN_DIR against a cluster whose node runs on crishim (or, with
 * KUBE_RUNTIME=containerd, on containerd's CRI for the reference counts). A spec may fail only
 * for a reason named below that no runtime on this machine can get past.
 */
import { execFile } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CONTROL_PLANE, kubeBinaries } from './binaries';
import { startCluster, type Cluster } from './cluster';
import { startE2eRegistry, type E2eRegistry } from './e2e-images';
import type { RuntimeKind } from './runtimes';

jest.setTimeout(3 * 3600_000);

const FOCUS = '\\[NodeConformance\\]';
/**
 * Not run: its secret holds credentials for gcr.io's private registry, which is not reachable from
 * here, so it can only fail, after 14 minutes of retried pulls.
 */
const NOT_RUN_HERE = 'should be able to pull from private registry with secret';
const SKIP = `\\[Serial\\]|\\[Disruptive\\]|\\[Flaky\\]|\\[Slow\\]|\\[Feature:[^\\]]+\\]|${NOT_RUN_HERE}`;

/** Specs no runtime can pass on these machines, and why. */
const CANNOT_PASS_HERE: ReadonlyArray<{ spec: RegExp; why: string }> = [
  {
    spec: /PrivilegedPod .*should enable privileged commands/,
    why: "creates a `dummy` link inside the pod; this VM's kernel has no dummy link kind",
  },
];

interface SpecReport {
  ContainerHierarchyTexts: string[] | null;
  LeafNodeText: string;
  LeafNodeType: string;
  State: string;
  Failure?: { Message: string };
}

const kind = (process.env.KUBE_RUNTIME ?? 'crishim') as RuntimeKind;
let c: Cluster;
let registry: E2eRegistry;
let reportDir: string;

beforeAll(async () => {
  const bins = kubeBinaries([...CONTROL_PLANE, 'e2e.test', 'ginkgo']);
  reportDir = process.env.KUBE_REPORT_DIR ?? (await fsp.mkdtemp(path.join(os.tmpdir(), `node-conformance-${kind}-`)));
  await fsp.mkdir(reportDir, { recursive: true });
  registry = await startE2eRegistry(reportDir);
  c = await startCluster({
    runtime: kind,
    bins,
    images: [...registry.images, 'registry.k8s.io/pause:3.10'],
    registries: [registry.images[0].split('/')[0]],
  });
}, 600_000);

afterAll(async () => {
  // the registry's tags go whatever the cluster's stop does: left, they would name the images first
  try {
    await c?.stop();
  } finally {
    await registry?.stop();
  }
}, 600_000);

function runGinkgo(reportDir: string, nodes: number): Promise<string> {
  const args = [
    `--nodes=${nodes}`,
    `--focus=${FOCUS}`,
    `--skip=${SKIP}`,
    '--timeout=2h',
    '--no-color',
    `--json-report=report.json`,
    `--output-dir=${reportDir}`,
    c.bins.path('e2e.test'),
    '--',
    `--kubeconfig=${c.kubeconfig}`,
    '--provider=skeleton',
    '--disable-log-dump',
    `--report-dir=${reportDir}`,
  ];
  const env = { ...process.env, KUBE_TEST_REPO_LIST: registry.repoList };
  return new Promise((resolve) => {
    execFile(c.bins.path('ginkgo'), args, { maxBuffer: 256 << 20, cwd: reportDir, env }, (_err, stdout, stderr) =>
      resolve(stdout + stderr),
    );
  });
}

it('passes every [NodeConformance] spec that can pass on this machine', async () => {
  const output = await runGinkgo(reportDir, Number(process.env.KUBE_E2E_NODES ?? 4));
  await fsp.writeFile(path.join(reportDir, 'ginkgo.log'), output);
  const suites = JSON.parse(await fsp.readFile(path.join(reportDir, 'report.json'), 'utf8')) as Array<{
    SpecReports: SpecReport[] | null;
  }>;
  // the suite's set-up and report nodes are not specs
  const specs = suites.flatMap((s) => s.SpecReports ?? []).filter((r) => r.LeafNodeType === 'It');
  const nameOf = (r: SpecReport) => [...(r.ContainerHierarchyTexts ?? []), r.LeafNodeText].join(' ');
  const passed = specs.filter((r) => r.State === 'passed').map(nameOf);
  const failed = specs.filter((r) => r.State !== 'passed' && r.State !== 'skipped' && r.State !== 'pending');
  const excused = failed.filter((r) => CANNOT_PASS_HERE.some((x) => x.spec.test(nameOf(r))));
  const unexcused = failed
    .filter((r) => !excused.includes(r))
    .map((r) => `${nameOf(r)}: ${r.Failure?.Message ?? r.State}`);
  console.log(
    `NodeConformance on ${kind}: ${passed.length} passed, ${failed.length} failed ` +
      `(${excused.length} that cannot pass here: ${excused.map(nameOf).join('; ') || 'none'}); ` +
      `not run: "${NOT_RUN_HERE}"; report in ${reportDir}`,
  );
  expect(passed.length).toBeGreaterThan(0);
  expect(unexcused).toEqual([]);
});

/**
 * What a user does with a cluster whose node runs on crishim, checked through the API server as
 * they would see it: workloads, kubectl's node features, pod-to-pod traffic, pod stats read from
 * the runtime, and a runtime killed while pods start. KUBE_RUNTIME=containerd runs the same
 * against containerd's CRI, the reference.
 */
import { spawn } from 'child_process';
import { promises as fsp, readdirSync } from 'fs';
import * as http from 'http';
import * as path from 'path';
import { CONTROL_PLANE, kubeBinaries } from './binaries';
import { crishimContainers, startCluster, waitFor, type Cluster } from './cluster';
import { tail } from './processes';
import type { RuntimeKind } from './runtimes';
import { AGNHOST, BUSYBOX, configAndSecret, idJob, list, namespace, pod, sleepers, webDeployment } from './manifests';

jest.setTimeout(600_000);

interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  restartCount: number;
  state: { waiting?: { reason: string }; running?: object; terminated?: { exitCode: number } };
  lastState?: { terminated?: { reason?: string; exitCode: number; message?: string } };
}
interface Pod {
  metadata: { name: string; labels?: Record<string, string> };
  status: { phase: string; podIP?: string; containerStatuses?: ContainerStatus[] };
}

const NS = 'workloads';
const kind = (process.env.KUBE_RUNTIME ?? 'crishim') as RuntimeKind;
let c: Cluster;

const pods = (selector: string): Pod[] => c.json<{ items: Pod[] }>(['get', 'pods', '-n', NS, '-l', selector]).items;
const apply = (objs: Array<Record<string, unknown>>): string => c.kubectl(['apply', '-f', '-'], { input: list(objs) });

beforeAll(async () => {
  const bins = kubeBinaries(CONTROL_PLANE);
  c = await startCluster({
    runtime: kind,
    bins,
    images: [AGNHOST, BUSYBOX, 'registry.k8s.io/pause:3.10'],
    // the kubelet then takes pod and container stats from ListPodSandboxStats alone
    featureGates: { PodAndContainerStatsFromCRI: true },
  });
  apply([namespace(NS), ...configAndSecret(NS)]);
  await waitFor('the namespace service account', () => c.kubectl(['get', 'sa', 'default', '-n', NS, '-o', 'name']));
}, 300_000);

afterAll(async () => {
  await c?.stop();
}, 300_000);

afterEach(async () => {
  // a kubelet that panicked (as on pod stats without a default interface) fails the test that made it
  if (c && !c.kubelet.alive()) throw new Error(`the kubelet died:\n${await tail(c.kubelet, 60)}`);
});

it("registers the node Ready with the runtime's name and version", () => {
  const node = c.json<{ status: { nodeInfo: { containerRuntimeVersion: string } } }>(['get', 'node', c.node]);
  expect(node.status.nodeInfo.containerRuntimeVersion).toMatch(
    kind === 'crishim' ? /^docker:\/\/\d/ : /^containerd:\/\//,
  );
});

describe('a Deployment with init container, probes, ConfigMap, Secret, emptyDir and a sidecar', () => {
  let web: Pod[];
  beforeAll(async () => {
    apply([webDeployment(NS, 2)]);
    c.kubectl(['rollout', 'status', '-n', NS, 'deployment/web', '--timeout=180s'], { timeoutMs: 200_000 });
    web = pods('app=web');
  });

  it('becomes available, its volumes holding what was put in them', () => {
    expect(web).toHaveLength(2);
    const name = web[0].metadata.name;
    const read = (file: string) => c.kubectl(['exec', '-n', NS, name, '-c', 'web', '--', 'cat', file]);
    expect(read('/config/greeting')).toBe('hello');
    expect(read('/secret/token')).toBe('s3cret');
    expect(read('/work/init.txt')).toBe('init-done\n');
    expect(c.kubectl(['logs', '-n', NS, name, '-c', 'sidecar'])).toContain('init-done');
    expect(c.kubectl(['logs', '-n', NS, name, '-c', 'init'])).toBe('');
  });

  it('reports each container with the image the pod asked for, not an image id', () => {
    for (const p of web) {
      const byName = new Map((p.status.containerStatuses ?? []).map((s) => [s.name, s]));
      expect(byName.get('web')?.image).toBe(AGNHOST);
      expect(byName.get('sidecar')?.image).toBe(BUSYBOX);
      expect(byName.get('web')?.imageID).not.toBe('');
    }
  });

  it('lets one pod reach another across the node (FORWARD DROP on a Docker host)', () => {
    const [a, b] = web;
    const got = c.kubectl([
      'exec',
      '-n',
      NS,
      b.metadata.name,
      '-c',
      'sidecar',
      '--',
      'curl',
      '-s',
      '--max-time',
      '5',
      `http://${a.status.podIP}:8080/hostname`,
    ]);
    expect(got).toBe(a.metadata.name);
  });

  it('kubectl exec takes stdin, cp copies both ways, port-forward reaches the pod', async () => {
    const name = web[0].metadata.name;
    expect(c.kubectl(['exec', '-i', '-n', NS, name, '-c', 'sidecar', '--', 'cat'], { input: 'from-stdin' })).toBe(
      'from-stdin',
    );
    const local = path.join(c.dir, 'cp-in.txt');
    await fsp.writeFile(local, 'copied-in\n');
    c.kubectl(['cp', '-n', NS, '-c', 'sidecar', local, `${name}:/tmp/cp.txt`]);
    expect(c.kubectl(['exec', '-n', NS, name, '-c', 'sidecar', '--', 'cat', '/tmp/cp.txt'])).toBe('copied-in\n');
    const back = path.join(c.dir, 'cp-out.txt');
    c.kubectl(['cp', '-n', NS, '-c', 'sidecar', `${name}:/tmp/cp.txt`, back]);
    expect(await fsp.readFile(back, 'utf8')).toBe('copied-in\n');

    expect(await portForwardGet(c, name, '/hostname')).toBe(name);
  });
});

/** `kubectl port-forward` to the pod's 8080 on a free local port, one GET through it. */
async function portForwardGet(cl: Cluster, podName: string, urlPath: string): Promise<string> {
  const pf = spawn(
    cl.bins.path('kubectl'),
    ['--kubeconfig', cl.kubeconfig, 'port-forward', '-n', NS, `pod/${podName}`, ':8080'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      pf.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      pf.once('exit', (code) => reject(new Error(`port-forward exited ${code}: ${out}`)));
    });
    return await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: urlPath, timeout: 10_000 }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
  } finally {
    pf.kill();
  }
}

it('runs a Job as the user and group it asks for', () => {
  apply([idJob(NS, 1234, 5678)]);
  c.kubectl(['wait', '-n', NS, '--for=condition=complete', 'job/whoami', '--timeout=120s'], { timeoutMs: 130_000 });
  expect(c.kubectl(['logs', '-n', NS, 'job/whoami'])).toBe('1234\n5678\n');
});

it('backs a crashing container off, and kubectl logs --previous reads the last run', async () => {
  apply([pod(NS, 'crasher', ['sh', '-c', 'echo attempt-output; exit 3'])]);
  const st = await waitFor(
    'two restarts in CrashLoopBackOff',
    () => {
      const s = pods('app=crasher')[0]?.status.containerStatuses?.[0];
      return s && s.restartCount >= 2 && s.state.waiting?.reason === 'CrashLoopBackOff' ? s : undefined;
    },
    180_000,
  );
  expect(st.restartCount).toBeGreaterThanOrEqual(2);
  expect(c.kubectl(['logs', '-n', NS, 'crasher', '--previous'])).toBe('attempt-output\n');
  c.kubectl(['delete', 'pod', '-n', NS, 'crasher', '--wait=false']);
});

it('keeps the kubelet up while it reads pod stats from the runtime as pods come and go', async () => {
  const summary = async () =>
    JSON.parse(await c.kubeletGet('/stats/summary')) as {
      pods: Array<{ podRef: { name: string }; network?: { name?: string; rxBytes?: number } }>;
    };
  for (let round = 0; round < 3; round++) {
    apply([sleepers(NS, 'churn', 10)]);
    // the kubelet reads stats while sandboxes are set up and torn down around it
    for (let i = 0; i < 5; i++) {
      await summary();
      await new Promise((r) => setTimeout(r, 1000));
    }
    c.kubectl(['delete', 'deployment', '-n', NS, 'churn', '--wait=false']);
    for (let i = 0; i < 5; i++) {
      await summary();
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  expect(c.kubelet.alive()).toBe(true);
  expect(await fsp.readFile(c.kubelet.logFile, 'utf8')).not.toMatch(/panic:|nil pointer dereference/);
  // a running pod's network counters come from the runtime's pod stats
  const webStats = await waitFor('stats of the web pods', async () => {
    const s = (await summary()).pods.filter((p) => p.podRef.name.startsWith('web-'));
    return s.length === 2 && s.every((p) => p.network?.name === 'eth0') ? s : undefined;
  });
  expect(webStats.every((p) => (p.network?.rxBytes ?? 0) > 0)).toBe(true);
});

it('a runtime killed -9 while 30 pods start: every pod comes up, and no attempt that ran is counted as restarted', async () => {
  apply([sleepers(NS, 'burst', 30)]);
  await waitFor(
    'some burst pods running',
    () => pods('app=burst').filter((p) => p.status.phase === 'Running').length >= 5 || undefined,
    120_000,
    200,
  );
  await c.runtime.crashAndRestart();
  c.kubectl(['rollout', 'status', '-n', NS, 'deployment/burst', '--timeout=300s'], { timeoutMs: 320_000 });
  const burst = pods('app=burst');
  expect(burst).toHaveLength(30);
  // A kubelet that listed an attempt in its created state before the crash keeps it in its cached
  // status after crishim removed it, and numbers the next attempt 1: a restart with no termination
  // behind it, once. Any other is an attempt that ran and was taken as failed: name what ended it.
  const restarted = burst.flatMap((p) =>
    (p.status.containerStatuses ?? [])
      .filter((s) => s.restartCount > 0)
      .map((s) => ({ pod: p.metadata.name, restarts: s.restartCount, last: s.lastState?.terminated })),
  );
  expect(restarted.filter((r) => r.restarts > 1 || r.last !== undefined)).toEqual([]);
  if (kind === 'crishim') {
    // no container Docker created and nobody started (a phantom attempt) stays behind
    expect((await crishimContainers(c)).filter((x) => x.state === 'created')).toEqual([]);
  }
});

it('removing every workload leaves no container and no pod IP behind', async () => {
  c.kubectl(['delete', 'namespace', NS, '--wait=false']);
  await waitFor(
    'the namespace to go',
    () => c.kubectl(['get', 'namespace', NS, '--ignore-not-found', '-o', 'name']).trim() === '' || undefined,
    300_000,
    2000,
  );
  const network = `crishim-${c.runtime.cni.bridge}`;
  const reserved = () =>
    readdirSync(path.join(c.runtime.cni.ipamDir, network)).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f));
  await waitFor('every pod IP released', () => reserved().length === 0 || undefined, 120_000, 2000);
  if (kind === 'crishim') {
    // the kubelet removes dead sandboxes at its next container GC (every minute)
    await waitFor(
      'no container left',
      async () => (await crishimContainers(c)).length === 0 || undefined,
      180_000,
      5000,
    );
  }
});

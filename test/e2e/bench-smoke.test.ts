import { execFileSync } from 'child_process';
import * as path from 'path';

jest.setTimeout(300_000);

const REPO = path.resolve(__dirname, '..', '..');

it('the benchmark runs end to end in smoke mode and reports every section', () => {
  execFileSync('npx', ['tsc', '-p', 'bench/tsconfig.json'], { cwd: REPO, stdio: 'pipe' });
  const out = execFileSync(process.execPath, [path.join(REPO, 'bench', 'dist', 'bench', 'bench.js'), '--smoke'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  process.stdout.write(out);
  expect(out).toMatch(/RunPodSandbox p50, host network vs raw create\+start +\| +[\d.]+ ms +\| +[\d.]+ ms +\| +[\d.]+/);
  expect(out).toMatch(/concurrent pods .* 0 failures, 0 leaks/);
  // List RPCs answer from the state view: no Docker call whatever the number of pods
  expect(out).toMatch(/ListPodSandbox at 2 pods \(docker calls per RPC: 0; first call: \d+\)/);
  expect(out).toMatch(/ListPodSandbox at 5 pods \(docker calls per RPC: 0; first call: \d+\)/);
  expect(out).toMatch(/ListContainers at 5 pods \(docker calls per RPC: 0; first call: \d+\)/);
  expect(out).toMatch(/ListContainerStats at 5 pods \(docker calls per RPC: 0; first call: \d+\)/);
  expect(out).toMatch(
    /kubelet load, 3 pods, 5 s: runtime CPU % \(\+ dockerd CPU %\) +\| [\d.]+ % \(\+ [\d.]+ %\) +\| - \(\+ [\d.]+ %\)/,
  );
  // the shim's cost: the same relists from a client that sends the socket path, as old kubelets do
  const byAuthority =
    /relist at \d+ pods, \d+ calls in a row: CPU per relist, kubelet-shaped client sending :authority localhost \/ the socket path .*\| ([\d.]+) ms \/ ([\d.]+) ms +\| - +\| [\d.]+/.exec(
      out,
    );
  expect(byAuthority).not.toBeNull();
  expect(Number(byAuthority?.[2])).toBeGreaterThan(0);
  expect(out).toMatch(
    /kubelet load, 3 pods, 5 s: relist p50 \/ p99 \(kubelet-shaped client\) +\| [\d.]+ ms \/ [\d.]+ ms +\| [\d.]+ ms \/ [\d.]+ ms/,
  );
  // every other relist goes through grpc-js's client instead
  expect(out).toMatch(
    /kubelet load, 3 pods, 5 s: relist p50 \/ p99 through grpc-js's client \(every field decoded\) +\| [\d.]+ ms \/ [\d.]+ ms/,
  );
  expect(out).toMatch(
    /kubelet load, 3 pods, 5 s: stats round p50 \/ p99 \(3 calls, kubelet-shaped client\) +\| [\d.]+ ms \/ [\d.]+ ms/,
  );
  // and every other stats round through grpc-js's client
  expect(out).toMatch(
    /kubelet load, 3 pods, 5 s: stats round p50 \/ p99 through grpc-js's client \(every field decoded\) +\| [\d.]+ ms \/ [\d.]+ ms/,
  );
  // a call's main-thread CPU is part of the whole process's: the two counts come from one window
  const perCall =
    /kubelet load, 3 pods, 5 s: CPU per ListContainerStats \/ ListPodSandboxStats, p50 of 5 \(main thread\) +\| ([\d.]+) ms \/ ([\d.]+) ms \(([\d.]+) ms \/ ([\d.]+) ms\)/.exec(
      out,
    );
  expect(perCall).not.toBeNull();
  expect(Number(perCall?.[3])).toBeLessThanOrEqual(Number(perCall?.[1]));
  expect(Number(perCall?.[4])).toBeLessThanOrEqual(Number(perCall?.[2]));
  const statsCost =
    /stats-cost, 3 pods: CPU per ListPodSandboxStats, p50 \/ min of 3 \(main thread p50\) +\| ([\d.]+) \/ [\d.]+ ms \(main ([\d.]+)\)/.exec(
      out,
    );
  expect(statsCost).not.toBeNull();
  expect(Number(statsCost?.[2])).toBeLessThanOrEqual(Number(statsCost?.[1]));
  expect(out).toMatch(
    /kubelet load, 3 pods, 5 s: runtime RSS \(anonymous part\) after the load +\| [\d.]+ MiB \(anon [\d.]+\)/,
  );
  // sampled once a second through the 5 s load: a mean no higher than its max
  const during =
    /kubelet load, 3 pods, 5 s: runtime RSS during the load, mean \/ max \(quarters' means\) +\| ([\d.]+) \/ ([\d.]+) MiB/.exec(
      out,
    );
  expect(during).not.toBeNull();
  expect(Number(during?.[1])).toBeLessThanOrEqual(Number(during?.[2]));
  // relists and status calls cost no Docker call (a raw relist is two), and no call fails
  const load =
    /kubelet load, 3 pods, 5 s: docker calls by crishim during the load \((\d+) relists\) +\| (\d+) +\| - +\| 0 errors/.exec(
      out,
    );
  expect(load).not.toBeNull();
  expect(Number(load?.[2])).toBeLessThan(Number(load?.[1]));
  // the lifecycle section: every call of a pod's life timed on its own
  for (const call of [
    'RunPodSandbox',
    'CreateContainer',
    'StartContainer',
    'ListPodSandbox',
    'StopContainer',
    'StopPodSandbox',
    'RemovePodSandbox',
  ]) {
    expect(out).toMatch(new RegExp(`pod lifecycle, 3 pods one call at a time[^]*\\| ${call} p50 +\\| [\\d.]+ ms +\\|`));
  }
  // and what crishim and dockerd spent on each pod of it
  for (const who of ['runtime', 'dockerd', 'runtime \\+ dockerd']) {
    expect(out).toMatch(new RegExp(`pod lifecycle, 3 pods[^]*\\| ${who} CPU per pod +\\| [\\d.]+ ms +\\|`));
  }
  // logs: every line exactly once, with and without a kill -9, and the same-run Docker figures
  expect(out).toMatch(/logs: 20,000-line burst .*\| exactly once, \+[\d.]+ s +\| written in [\d.]+ s +\| ok/);
  expect(out).toMatch(/logs: copy throughput vs Docker .*\| [\d.]+ MB\/s +\| [\d.]+ MB\/s +\| [\d.]+/);
  expect(out).toMatch(/logs: CPU seconds per MB .*\| [\d.]+ s\/MB +\| [\d.]+ s\/MB +\|/);
  expect(out).toMatch(
    /logs: 10,000-line burst, crishim killed -9 .*\| exactly once, \+[\d.]+ s +\| written in [\d.]+ s +\| ok/,
  );
  expect(out).toMatch(/logs: 4 chatty containers .*\| all exactly once, spread [\d.]+ s/);
  expect(out).toMatch(/daemon RSS idle \/ after 20 create\+remove cycles \(quarters: [\d., ]+ MiB\)/);
  // memory flatness over pod churn: RSS and heap after a forced GC at each mark, every cycle clean
  expect(out).toMatch(
    /cycles: 20 pod create\/remove cycles, 4 in parallel \(\d+ s\): RSS at cycle 0 \/ 2 \/ 10 \/ 20 +\| [\d.]+ \/ [\d.]+ \/ [\d.]+ \/ [\d.]+ MiB .*\| flat: growth <= 10% after warm-up: -?[\d.]+ %/,
  );
  expect(out).toMatch(
    /cycles: .*heap used after a forced GC at cycle 0 \/ 2 \/ 10 \/ 20 +\| [\d.]+ \/ [\d.]+ \/ [\d.]+ \/ [\d.]+ MiB/,
  );
  // and no fd held for a gone pod once a stats round has seen it go
  expect(out).toMatch(
    /cycles: .*open fds at cycle 0 \/ 2 \/ 10 \/ 20 +\| \d+ \/ \d+ \/ \d+ \/ \d+ +\| - +\| no growth after warm-up \(<= \+8\): [+-]?\d+ \(ok\)/,
  );
  expect(out).toMatch(/cycles: .*failed cycles \/ leftovers \/ background call errors +\| 0 \/ 0 \/ 0 +\| - +\| ok/);
});

import { execFileSync } from 'child_process';
import * as path from 'path';

jest.setTimeout(300_000);

const REPO = path.resolve(__dirname, '..', '..');

it('the benchmark runs end to end in smoke mode and reports every section', () => {
  execFileSync('npx', ['tsc', '-p', 'bench/tsconfig.json'], { cwd: REPO, stdio: 'pipe' });
  const out = execFileSync(process.execPath, [path.join(REPO, 'bench', 'dist', 'bench', 'bench.js'), '--smoke'], { cwd: REPO, encoding: 'utf8' });
  process.stdout.write(out);
  expect(out).toMatch(/RunPodSandbox p50, host network vs raw create\+start +\| +[\d.]+ ms +\| +[\d.]+ ms +\| +[\d.]+/);
  expect(out).toMatch(/concurrent pods .* 0 failures, 0 leaks/);
  // List RPCs cost one Docker call whatever the number of pods
  expect(out).toMatch(/ListPodSandbox at 2 pods \(docker calls per RPC: 1; first call: \d+\)/);
  expect(out).toMatch(/ListPodSandbox at 5 pods \(docker calls per RPC: 1; first call: \d+\)/);
  expect(out).toMatch(/ListContainers at 5 pods \(docker calls per RPC: 1; first call: \d+\)/);
  expect(out).toMatch(/ListContainerStats at 5 pods \(docker calls per RPC: 1; first call: \d+\)/);
  // logs: every line exactly once, with and without a kill -9, and the same-run Docker figures
  expect(out).toMatch(/logs: 20,000-line burst .*\| exactly once, \+[\d.]+ s +\| written in [\d.]+ s +\| ok/);
  expect(out).toMatch(/logs: copy throughput vs Docker .*\| [\d.]+ MB\/s +\| [\d.]+ MB\/s +\| [\d.]+/);
  expect(out).toMatch(/logs: CPU seconds per MB .*\| [\d.]+ s\/MB +\| [\d.]+ s\/MB +\|/);
  expect(out).toMatch(/logs: 10,000-line burst, crishim killed -9 .*\| exactly once, \+[\d.]+ s +\| written in [\d.]+ s +\| ok/);
  expect(out).toMatch(/logs: 4 chatty containers .*\| all exactly once, spread [\d.]+ s/);
  expect(out).toMatch(/daemon RSS idle \/ after 20 create\+remove cycles \(quarters: [\d., ]+ MiB\)/);
});

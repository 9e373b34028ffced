import {
  REPORT_BEGIN,
  REPORT_END,
  renderReport,
  reportArg,
  rewriteReport,
  runCommand,
  sectionCommand,
  shellWord,
  type RunFacts,
  type SectionFigures,
} from '../../bench/report';

const machine = {
  nproc: 2,
  cpuModel: 'AMD EPYC 7B13',
  memoryGiB: 23.5,
  kernel: '6.18.44',
  docker: '20.10.24+dfsg1',
  dockerApi: '1.41',
  cgroup: 'v1, cgroupfs driver',
  node: 'v20.20.2',
};

const run = (over: Partial<RunFacts> = {}): RunFacts => ({
  argv: ['--only=kubelet-load,stats-cost', '--report', 'docs/benchmarks.md'],
  env: {},
  machine,
  daemon: 'dist/main.js under node v20.20.2 --v8-pool-size=1',
  compared: [],
  smoke: false,
  ...over,
});

const load: SectionFigures = {
  section: 'kubelet-load',
  rows: [
    ['kubelet load, 110 pods, 60 s: runtime CPU % (+ dockerd CPU %)', '2.34 % (+ 0.07 %)', '- (+ 3.82 %)', '0.63'],
    ['kubelet load, 110 pods, 60 s: relist p50 / p99', '2.5 ms / 7.1 ms', '21.3 ms / 49.0 ms', '0.12'],
  ],
  tables: [],
};
const stats: SectionFigures = {
  section: 'stats-cost',
  rows: [['stats-cost, 110 pods: CPU per ListPodSandboxStats', '20.6 / 14.4 ms (main 14.5)', '-', '-']],
  tables: [],
};

const page = (figures: string): string =>
  `# Benchmarks\n\nHow to read them.\n\n## Current figures\n\n${figures}\n\nAfter the figures.\n`;

describe('the bench report', () => {
  it('takes --report FILE and --report=FILE, and refuses --report without a file', () => {
    expect(reportArg(['--only=lists', '--report', 'docs/benchmarks.md'])).toBe('docs/benchmarks.md');
    expect(reportArg(['--report=out.md', '--smoke'])).toBe('out.md');
    expect(reportArg(['--smoke'])).toBeUndefined();
    expect(() => reportArg(['--report'])).toThrow(/needs a file/);
    expect(() => reportArg(['--report', '--smoke'])).toThrow(/needs a file/);
  });

  it('writes one table per section that ran, each with its runtimes and the command that reproduces it', () => {
    const text = renderReport(run(), [load, stats, { section: 'lists', rows: [], tables: [] }]);
    expect(text.startsWith(REPORT_BEGIN)).toBe(true);
    expect(text.endsWith(REPORT_END)).toBe(true);
    expect(text).toContain(
      'Figures of one run of `npm run bench -- --only=kubelet-load,stats-cost --report docs/benchmarks.md`.',
    );
    expect(text).toContain('Reproduce: `npm run bench -- --only=kubelet-load`');
    expect(text).toContain('Reproduce: `npm run bench -- --only=stats-cost`');
    expect(text).toContain('Set against: raw Docker lists (the baseline)');
    expect(text).toContain('other runtimes: none in this run.');
    expect(text).toContain('No other CRI runtime in this run: `--compare` adds');
    // a section that recorded nothing gets no heading
    expect(text).not.toContain('`lists`');
    const tables = text.split('\n').filter((l) => l.startsWith('| measure '));
    expect(tables).toHaveLength(2);
    expect(text).toMatch(/\| kubelet load, 110 pods, 60 s: relist p50 \/ p99 +\| 2\.5 ms \/ 7\.1 ms +\| 21\.3 ms/);
    expect(text).toMatch(/\| stats-cost, 110 pods: CPU per ListPodSandboxStats +\| 20\.6 \/ 14\.4 ms \(main 14\.5\)/);
  });

  it('names the machine it read: nproc, memory, kernel, Docker', () => {
    const text = renderReport(run(), [load]);
    expect(text).toContain(
      'Machine: 2 CPUs (`nproc`), AMD EPYC 7B13; 23.5 GiB of memory; kernel 6.18.44; Docker 20.10.24+dfsg1 (API 1.41), cgroup v1, cgroupfs driver; node v20.20.2.',
    );
    expect(text).toContain('crishim ran as dist/main.js under node v20.20.2 --v8-pool-size=1.');
  });

  it('puts the compared runtimes in the sections they act on, and their tables as markdown', () => {
    const compare = '--compare=unix:///tmp/cmp/cri-dockerd.sock:cri-dockerd:/tmp/cmp/cri-dockerd.pid';
    const lifecycle: SectionFigures = {
      section: 'lifecycle',
      rows: [],
      tables: [
        'pod lifecycle, 20 pods one call at a time, runtimes in turn\n  CPU per pod: the whole run\n| call | crishim | cri-dockerd |\n|---|---|---|\n| RunPodSandbox p50 | 277.2 ms | 286.2 ms |',
      ],
    };
    const text = renderReport(run({ argv: ['--only=lifecycle,stats-cost', compare], compared: ['cri-dockerd'] }), [
      lifecycle,
      stats,
    ]);
    expect(text).toContain('Compared runtimes (`--compare`): cri-dockerd.');
    expect(text).toContain(`Reproduce: \`npm run bench -- --only=lifecycle ${compare}\``);
    expect(text).toContain('Set against: the same calls on other runtimes: cri-dockerd.');
    // --compare does nothing for stats-cost: its command goes without it
    expect(text).toContain('Reproduce: `npm run bench -- --only=stats-cost`');
    expect(text).toContain(
      'pod lifecycle, 20 pods one call at a time, runtimes in turn:\n\n- CPU per pod: the whole run\n\n| call | crishim | cri-dockerd |',
    );
  });

  it('sets the environment the run had in the commands', () => {
    const r = run({
      env: { CRISHIM_BENCH_NODE_FLAGS: '--cpu-prof --cpu-prof-dir=/tmp/p', DOCKER_HOST: 'unix:///x.sock' },
    });
    expect(runCommand(r)).toBe(
      "DOCKER_HOST=unix:///x.sock CRISHIM_BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/p' npm run bench -- --only=kubelet-load,stats-cost --report docs/benchmarks.md",
    );
    expect(sectionCommand(r, 'stats-cost')).toBe(
      "DOCKER_HOST=unix:///x.sock CRISHIM_BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/p' npm run bench -- --only=stats-cost",
    );
    expect(shellWord("it's")).toBe(`'it'\\''s'`);
  });

  it('says when a run was a smoke run', () => {
    expect(renderReport(run({ smoke: true }), [load])).toMatch(/A smoke run .* no figure is representative/);
    expect(renderReport(run(), [load])).not.toMatch(/smoke/);
  });

  it('replaces the figures between the markers and keeps the text around them', () => {
    const before = page(`${REPORT_BEGIN}\nold figures\n| old | table |\n${REPORT_END}`);
    const generated = renderReport(run(), [load]);
    const after = rewriteReport(before, generated);
    expect(after).toBe(page(generated));
    expect(after).not.toContain('old figures');
    // a second run replaces the first: figures never pile up
    const again = rewriteReport(after, renderReport(run(), [stats]));
    expect(again.split(REPORT_BEGIN)).toHaveLength(2);
    expect(again).not.toContain('kubelet load, 110 pods');
    expect(again).toContain('stats-cost, 110 pods');
    expect(again.endsWith('After the figures.\n')).toBe(true);
  });

  it('refuses a file without the markers instead of overwriting it', () => {
    expect(() => rewriteReport('# Benchmarks\n\nhand-written\n', 'x', 'docs/benchmarks.md')).toThrow(
      /docs\/benchmarks\.md has no bench report markers/,
    );
    expect(() => rewriteReport(`${REPORT_END}\n${REPORT_BEGIN}\n`, 'x')).toThrow(/no bench report markers/);
  });

  it('escapes a pipe inside a cell', () => {
    const text = renderReport(run(), [{ section: 'churn', rows: [['a | b', '1', '-', '-']], tables: [] }]);
    expect(text).toMatch(/\| a \\\| b +\| 1 +\|/);
  });
});

/**
 * `npm run bench -- --report FILE`: the run's figures written into FILE (docs/benchmarks.md) between
 * two marker lines, replacing whatever figures were there, so the file only ever holds the latest
 * run: one table per section that ran, with the runtimes it was compared with, the command that
 * reproduces it, and the machine it ran on. The text around the markers is the file's own.
 */
import { execFileSync } from 'child_process';
import * as os from 'os';

export const REPORT_BEGIN =
  '<!-- bench-report:begin. Written by `npm run bench -- --report <this file>`; never edit by hand. -->';
export const REPORT_END = '<!-- bench-report:end -->';

/** One row of the bench's main table: what was measured, crishim's figure, its baseline, the ratio or result. */
export type BenchRow = readonly [string, string, string, string];

/** What one section of a run produced: rows of the main table, and tables of its own (a title line, notes, a markdown table). */
export interface SectionFigures {
  section: string;
  rows: BenchRow[];
  tables: string[];
}

/** The machine a run measured, read while it ran. */
export interface MachineFacts {
  /** `nproc`: the CPUs this process may run on. */
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  /** `uname -r` */
  kernel: string;
  docker: string;
  dockerApi: string;
  /** e.g. `v1, cgroupfs driver` */
  cgroup: string;
  node: string;
}

export interface RunFacts {
  /** The bench's own arguments (process.argv after the script). */
  argv: readonly string[];
  /** Environment variables that change what the bench measures, as set for this run. */
  env: Readonly<Record<string, string>>;
  machine: MachineFacts;
  /** How the measured daemon was started (daemon-command.ts's label). */
  daemon: string;
  /** The `--compare` runtimes' names. */
  compared: readonly string[];
  smoke: boolean;
}

/** The environment variables the bench reads, in the order a reproducing command sets them. */
export const BENCH_ENV = ['DOCKER_HOST', 'DOCKERD_PIDFILE', 'CRISHIM_BENCH_NODE_FLAGS', 'CRISHIM_BENCH_IMAGE'] as const;

/** What each section measures, and what crishim is set against in it. */
const SECTIONS: Record<string, { title: string; against: string }> = {
  overhead: {
    title: 'RunPodSandbox against Docker creating and starting the same pause container',
    against: 'raw Docker create + start, in the same run',
  },
  concurrent: { title: '50 pods made at once', against: 'failures and leftovers counted' },
  lists: {
    title: 'The List RPCs at 10, 100 and 200 pods',
    against: 'the same `docker ps` query issued directly, in the same run',
  },
  memory: { title: "The daemon's RSS over container create/remove cycles in one pod", against: 'its own idle RSS' },
  'relist-cost': {
    title: 'CPU per relist at 110 host-network pods, 500 relists back to back',
    against: "dockerd's CPU for the two `docker ps` of a runtime without a view",
  },
  'kubelet-load': {
    title: "A kubelet's steady polling at 110 pods",
    against:
      "raw Docker lists (the baseline) and a grpc-js server replaying crishim's answers (the floor); other runtimes",
  },
  lifecycle: { title: 'The pod lifecycle, one call at a time', against: 'the same calls on other runtimes' },
  churn: {
    title: "Changes behind crishim's back: List, Status and events checked after each",
    against: 'a 200 ms bound',
  },
  'churn-restart': { title: 'The same churn with a dockerd restart in each round', against: 'a 200 ms bound' },
  'stats-cost': {
    title: 'CPU per stats call at 110 pods',
    against: 'the main thread alone, in brackets',
  },
  'stop-pod': {
    title: 'StopPodSandbox against the calls it cannot do without',
    against: 'docker stop of the container and the pause container with the CNI DEL, made directly',
  },
  'pod-start': {
    title: 'A burst of pods started at once, as a kubelet starts them',
    against: 'the same Docker calls, CNI chain and Docker execs, made directly',
  },
  cycles: {
    title: '1,000 pod create/remove cycles under a relist and stats load',
    against: 'the first marks of the same run',
  },
  logs: {
    title: "The copy of Docker's json-file into the CRI log file",
    against: 'dockerd writing the same json-file',
  },
};

/** The sections whose figures `--compare` adds runtimes to. */
const COMPARED_SECTIONS = new Set(['kubelet-load', 'lifecycle', 'pod-start']);

/** `--report FILE` or `--report=FILE` from the bench's arguments. */
export function reportArg(argv: readonly string[]): string | undefined {
  const i = argv.indexOf('--report');
  if (i >= 0) {
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--'))
      throw new Error('--report needs a file: --report docs/benchmarks.md');
    return value;
  }
  return argv.find((a) => a.startsWith('--report='))?.slice('--report='.length) || undefined;
}

/** The arguments without `--report` and its file. */
function withoutReport(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--report') i++;
    else if (!argv[i].startsWith('--report=')) out.push(argv[i]);
  }
  return out;
}

/** A shell word: as it is when it needs no quoting, else in single quotes. */
export function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function command(env: Readonly<Record<string, string>>, args: readonly string[]): string {
  const prefix = BENCH_ENV.filter((k) => env[k] !== undefined).map((k) => `${k}=${shellWord(env[k])} `);
  return `${prefix.join('')}npm run bench${args.length ? ` -- ${args.map(shellWord).join(' ')}` : ''}`;
}

/** The whole run's command, as given. */
export function runCommand(run: Pick<RunFacts, 'argv' | 'env'>): string {
  return command(run.env, run.argv);
}

/** A command that runs `section` alone with the run's other arguments (`--compare` only where it acts). */
export function sectionCommand(run: Pick<RunFacts, 'argv' | 'env'>, section: string): string {
  const rest = withoutReport(run.argv).filter(
    (a) =>
      !a.startsWith('--only=') &&
      a !== '--logs-only' &&
      (COMPARED_SECTIONS.has(section) || !a.startsWith('--compare=')),
  );
  return command(run.env, [`--only=${section}`, ...rest]);
}

const cell = (s: string): string => s.replace(/\|/g, '\\|');

/** A markdown table, columns padded to their widest cell. */
function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows].map((r) => r.map(cell));
  const widths = header.map((_, i) => Math.max(3, ...all.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string => `| ${widths.map((w, i) => (r[i] ?? '').padEnd(w)).join(' | ')} |`;
  return [line(all[0]), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...all.slice(1).map(line)].join('\n');
}

/** A section's own table (runtime-compare.ts's shape: a title line, indented notes, a markdown table) as markdown. */
function ownTable(text: string): string {
  const lines = text.split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const caption = (first < 0 ? lines : lines.slice(0, first)).map((l) => l.trim()).filter(Boolean);
  const table = first < 0 ? [] : lines.slice(first);
  const [title, ...notes] = caption;
  return [
    ...(title ? [`${title}:`, ''] : []),
    ...(notes.length ? [...notes.map((n) => `- ${n}`), ''] : []),
    ...table,
  ].join('\n');
}

function machineLine(m: MachineFacts): string {
  return (
    `${m.nproc} CPUs (\`nproc\`), ${m.cpuModel}; ${m.memoryGiB.toFixed(1)} GiB of memory; ` +
    `kernel ${m.kernel}; Docker ${m.docker} (API ${m.dockerApi}), cgroup ${m.cgroup}; node ${m.node}`
  );
}

/** The generated part of the file, markers included. */
export function renderReport(run: RunFacts, sections: readonly SectionFigures[]): string {
  const out: string[] = [REPORT_BEGIN, ''];
  out.push(`Figures of one run of \`${runCommand(run)}\`.`, '');
  out.push(`- Machine: ${machineLine(run.machine)}.`);
  out.push(`- crishim ran as ${run.daemon}.`);
  if (run.compared.length) out.push(`- Compared runtimes (\`--compare\`): ${run.compared.join(', ')}.`);
  else out.push('- No other CRI runtime in this run: `--compare` adds cri-dockerd, containerd or any other.');
  if (run.smoke)
    out.push('- A smoke run (`--smoke`): every section at its seconds-long size, so no figure is representative.');
  out.push('');
  const ran = sections.filter((s) => s.rows.length || s.tables.length);
  if (!ran.length) out.push('No section reported any figure.', '');
  for (const s of ran) {
    const about = SECTIONS[s.section] ?? { title: s.section, against: '-' };
    const against = !COMPARED_SECTIONS.has(s.section)
      ? about.against
      : `${about.against}: ${run.compared.length ? run.compared.join(', ') : 'none in this run'}`;
    out.push(`### \`${s.section}\`: ${about.title}`, '');
    out.push(`Set against: ${against}. Reproduce: \`${sectionCommand(run, s.section)}\``, '');
    if (s.rows.length) out.push(markdownTable(['measure', 'crishim', 'baseline', 'ratio / result'], s.rows), '');
    for (const t of s.tables) out.push(ownTable(t), '');
  }
  out.push(REPORT_END);
  return out.join('\n');
}

/**
 * `existing` with its generated part replaced by `generated`. A file without the markers is
 * refused rather than overwritten: its text is someone's; the markers say where figures go.
 */
export function rewriteReport(
  existing: string,
  generated: string,
  file = 'the report file',
  markers: { begin: string; end: string } = { begin: REPORT_BEGIN, end: REPORT_END },
): string {
  const begin = existing.indexOf(markers.begin);
  const endAt = existing.indexOf(markers.end, begin < 0 ? 0 : begin);
  if (begin < 0 || endAt < 0)
    throw new Error(
      `${file} has no bench report markers: put the lines\n${markers.begin}\n${markers.end}\nwhere the figures go`,
    );
  return existing.slice(0, begin) + generated + existing.slice(endAt + markers.end.length);
}

/** `nproc`, else what node says this process may use. */
function nproc(): number {
  try {
    const n = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
    if (Number.isInteger(n) && n > 0) return n;
  } catch {
    /* no coreutils: node's count */
  }
  return os.availableParallelism();
}

/** The machine as this run sees it; Docker's part comes from its API (`docker version`, `docker info`). */
export function readMachine(docker: {
  version: string;
  apiVersion: string;
  cgroupVersion?: string;
  cgroupDriver?: string;
}): MachineFacts {
  return {
    nproc: nproc(),
    cpuModel: os.cpus()[0]?.model.trim() || 'unknown CPU',
    memoryGiB: os.totalmem() / 2 ** 30,
    kernel: os.release(),
    docker: docker.version,
    dockerApi: docker.apiVersion,
    cgroup: `${docker.cgroupVersion ? `v${docker.cgroupVersion}` : 'version unknown'}, ${docker.cgroupDriver || 'unknown'} driver`,
    node: process.version,
  };
}

import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { createLogger } from '../../src/logging/logger';
import { parseProcCgroup } from '../../src/stats/cgroup-path';
import { MISS, type FactsCache } from '../../src/stats/facts';
import type { ContainerFacts } from '../../src/stats/sample';
import { closeCgroupFiles } from '../../src/stats/files';
import { createRateTracker } from '../../src/stats/rate';
import { readSample, type SampleSources } from '../../src/stats/sampler';
import type { LayerUsageCache } from '../../src/stats/writable-layer';

let root: string;
beforeEach(async () => {
  root = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-sampler-'));
});
afterEach(async () => {
  closeCgroupFiles();
  await fsp.rm(root, { recursive: true, force: true });
});

function sources(facts: Map<string, ContainerFacts>, walked: string[]): SampleSources {
  const factsCache: FactsCache = {
    resolve: async (id) => facts.get(id),
    peek: () => MISS,
    forget: () => undefined,
  };
  const layers: LayerUsageCache = {
    get: async () => ({ bytes: 0, inodes: 0, truncated: false }),
    latest: (key) => {
      walked.push(key);
      return { bytes: 8192, inodes: 2, truncated: false };
    },
    forget: () => undefined,
  };
  return {
    facts: factsCache,
    rates: createRateTracker(0n),
    layers,
    cgroupRoot: root,
    logger: createLogger('error', 'json'),
  };
}

describe('readSample', () => {
  it('reads the cgroup the facts name, with a CPU rate from the second reading on', async () => {
    const cg = '/docker/c1';
    await fsp.mkdir(path.join(root, 'cpuacct', cg), { recursive: true });
    await fsp.mkdir(path.join(root, 'memory', cg), { recursive: true });
    await fsp.writeFile(path.join(root, 'cpuacct', cg, 'cpuacct.usage'), '1000\n');
    await fsp.writeFile(path.join(root, 'memory', cg, 'memory.usage_in_bytes'), '4096\n');
    await fsp.writeFile(path.join(root, 'memory', cg, 'memory.stat'), 'total_inactive_file 96\ntotal_rss 1000\n');
    const walked: string[] = [];
    const src = sources(
      new Map([
        [
          'c1',
          {
            pid: 7,
            cgroup: parseProcCgroup(`4:memory:${cg}\n2:cpuacct:${cg}\n`),
            cgroupParent: '',
            hostNetwork: false,
            upperDir: '/upper',
          },
        ],
      ]),
      walked,
    );
    const a = await readSample(src, { id: 'c1', running: true }, 'container');
    expect(a.usage).toMatchObject({ cpuUsageNanos: 1000n, memoryUsage: 4096, workingSet: 4000, rss: 1000 });
    expect(a.nanoCores).toBeUndefined();
    expect(a.writable).toEqual({ bytes: 8192, inodes: 2 });
    expect(a.timestamp).toMatch(/^\d{19}$/);
    await fsp.writeFile(path.join(root, 'cpuacct', cg, 'cpuacct.usage'), '2000000\n');
    const b = await readSample(src, { id: 'c1', running: true }, 'container');
    expect(b.nanoCores).toBeGreaterThan(0);
    expect(walked).toEqual(['c1', 'c1']);
  });

  it('a pause container gets no layer walk; unknown facts read as empty usage', async () => {
    const walked: string[] = [];
    const src = sources(
      new Map([['sb', { pid: 0, cgroupParent: '', hostNetwork: false, upperDir: '/upper' }]]),
      walked,
    );
    expect((await readSample(src, { id: 'sb', running: false }, 'sandbox')).usage).toEqual({});
    expect((await readSample(src, { id: 'gone', running: true }, 'container')).usage).toEqual({});
    expect(walked).toEqual([]);
  });
});

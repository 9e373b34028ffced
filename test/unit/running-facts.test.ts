import type { HugetlbCgroup } from '../../src/cgroups/hugetlb';
import type { HugepageLimit } from '../../src/cri/container-resources';
import { runningFactsCache } from '../../src/container/running-facts';
import type { Logger } from '../../src/logging/logger';

/** A hugetlb cgroup in memory: limits by container id, and every read and write counted. */
function fakeHugetlb() {
  const limits = new Map<string, HugepageLimit[]>();
  const reads: string[] = [];
  const cg: HugetlbCgroup = {
    read: async (pid, id) => {
      reads.push(`${id}@${pid}`);
      if (id === 'broken') throw new Error('EACCES');
      return limits.get(id) ?? [];
    },
    apply: async (_pid, id, l) => {
      limits.set(id, l);
      return l;
    },
  };
  return { cg, limits, reads };
}

const user = (uid: string) => ({ linux: { uid, gid: uid, supplemental_groups: [] } });
const log = {} as Logger;

describe('runningFactsCache', () => {
  it('reads a container once while its process is the same, again for a new pid', async () => {
    const h = fakeHugetlb();
    h.limits.set('c1', [{ page_size: '2MB', limit: '4194304' }]);
    const userReads: string[] = [];
    const facts = runningFactsCache(h.cg, {
      readUser: (pid, id) => (userReads.push(`${id}@${pid}`), user(String(pid))),
    });
    const first = await facts.get('c1', 100);
    expect(first).toEqual({ user: user('100'), hugepages: [{ page_size: '2MB', limit: '4194304' }] });
    await facts.get('c1', 100);
    await facts.get('c1', 100);
    expect(h.reads).toEqual(['c1@100']);
    expect(userReads).toEqual(['c1@100']);
    // a restart: a new init process, a new read
    expect((await facts.get('c1', 200)).user).toEqual(user('200'));
    expect(h.reads).toEqual(['c1@100', 'c1@200']);
    // another container has its own entry
    await facts.get('c2', 100);
    expect(h.reads).toEqual(['c1@100', 'c1@200', 'c2@100']);
  });

  it('keeps the identity of the first read while the process runs (a later setuid does not show)', async () => {
    let uid = '0';
    const facts = runningFactsCache(fakeHugetlb().cg, { readUser: () => user(uid) });
    expect((await facts.get('c1', 7)).user).toEqual(user('0'));
    uid = '1000';
    expect((await facts.get('c1', 7)).user).toEqual(user('0'));
  });

  it('a limit written through its hugetlb is what the next status reads', async () => {
    const h = fakeHugetlb();
    const facts = runningFactsCache(h.cg, { readUser: () => undefined });
    expect((await facts.get('c1', 5)).hugepages).toEqual([]);
    const written = await facts.hugetlb.apply(5, 'c1', [{ page_size: '1GB', limit: '0' }], log);
    expect(written).toEqual([{ page_size: '1GB', limit: '0' }]);
    expect((await facts.get('c1', 5)).hugepages).toEqual([{ page_size: '1GB', limit: '0' }]);
    expect(h.reads).toEqual(['c1@5', 'c1@5']);
    // a write to another container leaves this one's facts alone
    await facts.hugetlb.apply(6, 'c2', [], log);
    await facts.get('c1', 5);
    expect(h.reads).toEqual(['c1@5', 'c1@5']);
  });

  it('a cgroup it cannot read shows no limits, and the identity still', async () => {
    const facts = runningFactsCache(fakeHugetlb().cg, { readUser: () => user('3') });
    expect(await facts.get('broken', 9)).toEqual({ user: user('3'), hugepages: [] });
  });

  it('drops what was not asked for in idleMs, so removed containers are forgotten', async () => {
    const h = fakeHugetlb();
    let t = 0;
    const facts = runningFactsCache(h.cg, { readUser: () => undefined, idleMs: 1000, now: () => t });
    await facts.get('gone', 1);
    await facts.get('kept', 2);
    t = 600;
    await facts.get('kept', 2);
    t = 1200;
    await facts.get('kept', 2);
    // `gone` idle 1200 ms: dropped at the sweep, so asking again reads again; `kept` stayed cached
    await facts.get('gone', 1);
    expect(h.reads).toEqual(['gone@1', 'kept@2', 'gone@1']);
  });
});

import { childCgroups, keyPath, parentCgroup, type CgroupPaths } from './cgroup-path';
import { readCgroupPids, readCgroupTreePids, readCgroupUsage } from './cgroup';
import { cgroupUnderParent } from './facts';
import { readNetDev } from './netdev';
import { rateNow, type RateTracker } from './rate';
import { wallNanos, type PodSample, type Sample, type Target } from './sample';
import type { CgroupUsage } from './usage';

const add = (sum: number | undefined, v: number | undefined): number | undefined =>
  v === undefined ? sum : (sum ?? 0) + v;

/** Field-wise sum; a field is set when any reading has it. One pass, no closures: it runs for every pod at every stats call. */
export function sumUsage(all: readonly CgroupUsage[]): CgroupUsage {
  const out: CgroupUsage = {};
  for (const u of all) {
    if (u.cpuUsageNanos !== undefined) out.cpuUsageNanos = (out.cpuUsageNanos ?? 0n) + u.cpuUsageNanos;
    out.memoryUsage = add(out.memoryUsage, u.memoryUsage);
    out.workingSet = add(out.workingSet, u.workingSet);
    out.rss = add(out.rss, u.rss);
    out.pageFaults = add(out.pageFaults, u.pageFaults);
    out.majorPageFaults = add(out.majorPageFaults, u.majorPageFaults);
    out.pids = add(out.pids, u.pids);
  }
  return out;
}

/** How long a parent found to hold only the pod's containers (or not) stands before it is listed again. */
export const OWN_CGROUP_RECHECK_MS = 30_000;

/** Per pause container: its parent and members, whether the parent held only them, and when that was listed. */
export type OwnCgroupMemo = Map<string, { parent: string; members: string[]; own: boolean; at: number }>;

/** Whether `members` are the containers (same ids, same order) an answer was given for. */
function sameMembers(ids: readonly string[], members: readonly Sample[]): boolean {
  if (ids.length !== members.length) return false;
  for (let i = 0; i < ids.length; i++) if (ids[i] !== members[i].id) return false;
  return true;
}

/** Forgets answers due for a new look, those of pods gone among them: the memo stays the node's size. */
export function pruneOwnCgroups(memo: OwnCgroupMemo, now: number): void {
  for (const [key, v] of memo) if (now - v.at >= OWN_CGROUP_RECHECK_MS) memo.delete(key);
}

/**
 * The pod cgroup, when there is one of its own: the sandbox was given a
 * CgroupParent, every running member sits directly under the same parent, and
 * that parent holds nothing but this pod's containers. Docker's default
 * parent (/docker, system.slice) is shared by all containers, so there the
 * pod is the sum of its containers.
 *
 * Listing the parent was 110 readdirs per ListPodSandboxStats, ~3.7 ms of the main thread at 110
 * pods (cgroupfs keeps no directory mtime to tell a change by). With `memo`, the answer for the
 * same pause, parent and members stands for OWN_CGROUP_RECHECK_MS: a foreign container put under a
 * pod's parent (never the kubelet's doing) is noticed within that time.
 */
export function findPodCgroup(
  pause: Sample,
  members: readonly Sample[],
  root: string,
  memo?: OwnCgroupMemo,
  now = Date.now(),
): CgroupPaths | undefined {
  const pauseCgroup = cgroupUnderParent(pause.facts);
  if (!pauseCgroup) return undefined;
  const parent = parentCgroup(pauseCgroup);
  const parentKey = keyPath(parent);
  if (!parentKey || parentKey === '/') return undefined;
  for (const m of members) {
    if (m.facts?.cgroup && keyPath(parentCgroup(m.facts.cgroup)) !== parentKey) return undefined;
  }
  // the same question as last time is answered from the memo without building a key for it
  const known = memo?.get(pause.id);
  if (
    known &&
    now - known.at < OWN_CGROUP_RECHECK_MS &&
    known.parent === parentKey &&
    sameMembers(known.members, members)
  )
    return known.own ? parent : undefined;
  const ids = members.map((m) => m.id);
  const children = childCgroups(parent, root);
  const own = children !== undefined && children.every((c) => c.includes(pause.id) || ids.some((id) => c.includes(id)));
  // an unreadable parent is asked again at the next call
  if (children) memo?.set(pause.id, { parent: parentKey, members: ids, own, at: now });
  return own ? parent : undefined;
}

/** One sample's process count (a sample read without one is read now). */
function pidsOf(src: PodSources, s: Sample): number | undefined {
  return s.usage.pids ?? (s.facts?.cgroup ? readCgroupPids(s.facts.cgroup, src.cgroupRoot) : undefined);
}

/** The pod's process count as the sum of its pause's and members'. */
function leafPids(src: PodSources, pause: Sample, members: readonly Sample[]): number | undefined {
  let pids = pidsOf(src, pause);
  for (const m of members) {
    const n = pidsOf(src, m);
    if (n !== undefined) pids = (pids ?? 0) + n;
  }
  return pids;
}

export interface PodSources {
  rates: RateTracker;
  cgroupRoot: string;
  procRoot: string;
  ownCgroups?: OwnCgroupMemo;
}

/** The members with a cgroup to read (those running): the array given when that is all of them. */
function runningMembers(members: readonly Sample[]): readonly Sample[] {
  return members.every((m) => m.facts?.cgroup) ? members : members.filter((m) => m.facts?.cgroup);
}

/** The pause process whose network namespace holds the pod's interfaces; 0 when there is none to read. */
export function netnsPid(sandbox: Target, pause: Sample): number {
  const f = pause.facts;
  return sandbox.running && f && f.pid > 0 && !f.hostNetwork ? f.pid : 0;
}

/**
 * A pod's totals from its pause container's and members' readings: the pod
 * cgroup when it has one, else their sum; the network from the pause process's
 * netns, read once per pod.
 */
export function readPodUsage(src: PodSources, sandbox: Target, pause: Sample, members: readonly Sample[]): PodSample {
  // it runs for every pod at every stats call: no array is made where the members' own will do
  const cg = sandbox.running
    ? findPodCgroup(pause, runningMembers(members), src.cgroupRoot, src.ownCgroups)
    : undefined;
  const timestamp = wallNanos();
  const netPid = netnsPid(sandbox, pause);
  const network = netPid > 0 ? readNetDev(netPid, src.procRoot) : undefined;
  if (cg) {
    // pids.current counts the whole pod in one read; only without the pids controller are the
    // leaves summed (a parent's cgroup.procs lists none of its children's)
    const pids = readCgroupTreePids(cg, src.cgroupRoot) ?? leafPids(src, pause, members);
    const usage = { ...readCgroupUsage(cg, src.cgroupRoot, { pids: false }), pids };
    const nanoCores = rateNow(src.rates, `pod:${sandbox.id}`, usage.cpuUsageNanos);
    return { timestamp, usage, nanoCores, source: 'pod-cgroup', network };
  }
  let nanoCores = pause.nanoCores;
  const usages: CgroupUsage[] = [pause.usage];
  for (const m of members) {
    if (m.nanoCores !== undefined) nanoCores = (nanoCores ?? 0) + m.nanoCores;
    usages.push(m.usage);
  }
  // a pause under a cgroup parent was left for its pod to read (sampler.ts): that parent is not
  // the pod's own after all, so the pause's usage is part of the sum
  const pauseCgroup = cgroupUnderParent(pause.facts);
  if (pauseCgroup) {
    usages[0] = readCgroupUsage(pauseCgroup, src.cgroupRoot, { limit: false, pids: false });
    const rate = rateNow(src.rates, pause.id, usages[0].cpuUsageNanos);
    if (rate !== undefined) nanoCores = (nanoCores ?? 0) + rate;
  }
  const summed = sumUsage(usages);
  // a container read for ListContainerStats has no process count, nor a pause under a parent: read now
  summed.pids = leafPids(src, pause, members);
  return { timestamp, usage: summed, nanoCores, source: 'sum', network };
}

/** What the cgroup readers (v1 and v2) report for one cgroup; absent fields were not readable. */
export interface CgroupUsage {
  /** Cumulative CPU time, ns. */
  cpuUsageNanos?: bigint;
  memoryUsage?: number;
  /** Set only when the cgroup has a real limit. */
  memoryLimit?: number;
  /** usage minus inactive file pages, as the kubelet and cAdvisor compute it. */
  workingSet?: number;
  rss?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  /** Tasks in the cgroup (pids.current), or processes in a leaf's cgroup.procs when the pids controller is missing. */
  pids?: number;
}

/** A limit at or above this means "none" (v1 prints a huge page-rounded number; v2 prints `max`, which reads as undefined). */
export const NO_LIMIT = 2 ** 60;

export function realLimit(limit: number | undefined): number | undefined {
  return limit !== undefined && limit < NO_LIMIT ? limit : undefined;
}

/** The kubelet's working set: usage minus inactive file pages, never below zero. */
export function workingSet(usage: number | undefined, inactiveFile: number | undefined): number | undefined {
  if (usage === undefined) return undefined;
  return Math.max(0, usage - (inactiveFile ?? 0));
}

/**
 * Files a reading may skip (each is a syscall, at hundreds of containers per call): nothing
 * reports a pause container's own limit, and ListContainerStats reports no process counts
 * (pod totals read them when they need them, see pod-usage.ts). Both default to read.
 */
export interface UsageWanted {
  limit?: boolean;
  pids?: boolean;
}

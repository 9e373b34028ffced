import { readdirSync, statSync } from 'fs';
import { readTextSync } from './files';
import * as path from 'path';

/**
 * Where a process's cgroups live. Taken from /proc/<pid>/cgroup of the
 * container's init process rather than guessed from the driver (cgroupfs puts
 * containers at `<parent>/<id>`, systemd at `<slice>/docker-<id>.scope`, and a
 * CgroupParent moves both): the kernel already knows.
 */
export interface CgroupPaths {
  version: 1 | 2;
  /** v1: controller name -> path inside that hierarchy; v2: '' -> unified path. */
  paths: Map<string, string>;
}

export const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';

/** Parses /proc/<pid>/cgroup. v1 when a memory or cpuacct hierarchy is listed, else v2 (`0::<path>`). */
export function parseProcCgroup(text: string): CgroupPaths {
  const paths = new Map<string, string>();
  let unified: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[2] === '') unified = m[3];
    else for (const c of m[2].split(',')) paths.set(c.replace(/^name=/, ''), m[3]);
  }
  if (paths.has('memory') || paths.has('cpuacct')) return { version: 1, paths };
  return { version: 2, paths: new Map([['', unified ?? '/']]) };
}

/**
 * `make`, answered once per CgroupPaths object and root (tests read fake roots) and kept while
 * that object lives: a container's facts keep the same object for the container's life (facts.ts).
 */
function keptPerCgroup<T>(make: (cg: CgroupPaths, root: string) => T): (cg: CgroupPaths, root: string) => T {
  const kept = new WeakMap<CgroupPaths, { root: string; value: T }>();
  return (cg, root) => {
    const hit = kept.get(cg);
    if (hit && hit.root === root) return hit.value;
    const value = make(cg, root);
    kept.set(cg, { root, value });
    return value;
  };
}

/** A reader's files: its name for each -> [controller (the v1 hierarchy; unused on v2), file name]. */
export type CgroupFileNames<K extends string> = Record<K, readonly [controller: string, file: string]>;

/**
 * A reader's file paths for a cgroup, joined once per CgroupPaths object and root: a container's
 * files were joined anew at every stats call (v2), a pod cgroup's too (v1).
 */
export function filesPerCgroup<K extends string>(
  names: CgroupFileNames<K>,
): (cg: CgroupPaths, root: string) => Record<K, string> {
  return keptPerCgroup((cg, root) => {
    const out = {} as Record<K, string>;
    for (const k in names) out[k] = path.join(controllerDirSync(cg, names[k][0], root), names[k][1]);
    return out;
  });
}

const parentOf = keptPerCgroup((cg) => {
  const paths = new Map<string, string>();
  for (const [k, p] of cg.paths) paths.set(k, path.posix.dirname(p));
  return { version: cg.version, paths };
});

/**
 * The parent cgroup (one level up, in every hierarchy): where a pod cgroup would be. The same
 * object for the same child, so the pod cgroup's file names are worked out once too: a new
 * parent and its joined paths at every stats call were over a third of what a
 * ListPodSandboxStats allocated at 110 pods. Shared: not to be changed.
 */
export function parentCgroup(cg: CgroupPaths): CgroupPaths {
  // one level up is the same under any root
  return parentOf(cg, '');
}

/** The path that identifies a cgroup for comparisons: memory's on v1 (always mounted), the unified one on v2. */
export function keyPath(cg: CgroupPaths): string | undefined {
  return cg.version === 2 ? cg.paths.get('') : (cg.paths.get('memory') ?? cg.paths.get('cpuacct'));
}

/**
 * v1 hierarchies may be co-mounted (`cpu,cpuacct`); which directory holds a controller does not
 * change, so it is found once (a stat or two, synchronous: stats read cgroup files on one pass).
 */
const mountCache = new Map<string, string>();

function v1Mount(root: string, controller: string): string {
  const key = `${root}\0${controller}`;
  let hit = mountCache.get(key);
  if (hit === undefined) {
    hit = path.join(root, controller);
    for (const candidate of [controller, 'cpu,cpuacct', 'cpuacct,cpu']) {
      if (!candidate.split(',').includes(controller)) continue;
      const dir = path.join(root, candidate);
      if (statSync(dir, { throwIfNoEntry: false })) {
        hit = dir;
        break;
      }
    }
    mountCache.set(key, hit);
  }
  return hit;
}

/** Directory of one controller's cgroup (v1), or the unified directory whatever `controller` is (v2). */
export function controllerDirSync(cg: CgroupPaths, controller: string, root = DEFAULT_CGROUP_ROOT): string {
  if (cg.version === 2) return path.join(root, cg.paths.get('') ?? '/');
  return path.join(v1Mount(root, controller), cg.paths.get(controller) ?? '/');
}

/** Every directory of a cgroup: one per v1 hierarchy it is listed in (co-mounted ones once), the unified one on v2. */
export function cgroupDirs(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): Set<string> {
  const dirs = new Set<string>();
  for (const controller of cg.paths.keys()) dirs.add(controllerDirSync(cg, controller, root));
  return dirs;
}

/** Names of the child cgroups of a cgroup (in the memory hierarchy on v1). */
export function childCgroups(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): string[] | undefined {
  try {
    // a cgroupfs directory: read synchronously, as the files (see files.ts)
    const entries = readdirSync(controllerDirSync(cg, 'memory', root), { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return undefined;
  }
}

/** Reads /proc/<pid>/cgroup; undefined when the process is gone. */
export function readProcCgroup(pid: number, proc = '/proc'): { text: string; paths: CgroupPaths } | undefined {
  const text = readTextSync(path.join(proc, String(pid), 'cgroup'));
  return text === undefined ? undefined : { text, paths: parseProcCgroup(text) };
}

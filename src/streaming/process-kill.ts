import { promises as fsp } from 'fs';

/** Parent pid of every process on the host, from /proc/<pid>/stat. */
async function parentMap(): Promise<Map<number, number[]>> {
  const children = new Map<number, number[]>();
  for (const name of await fsp.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = await fsp.readFile(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // comm may contain spaces and parentheses: fields start after the last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(fields[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  return children;
}

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/**
 * SIGKILLs a process and all its descendants (the exec'd shell and whatever it
 * started). The root is stopped first so it cannot fork while we collect the tree.
 * `pid` is a host pid (docker exec inspect reports host pids), so crishim must
 * share the host pid namespace, as a node agent does.
 */
export async function killProcessTree(pid: number): Promise<number[]> {
  if (!Number.isInteger(pid) || pid <= 1) return [];
  if (!signal(pid, 'SIGSTOP')) return [];
  const tree = [pid];
  try {
    const children = await parentMap();
    for (let i = 0; i < tree.length; i++) {
      for (const c of children.get(tree[i]) ?? []) {
        signal(c, 'SIGSTOP');
        tree.push(c);
      }
    }
  } finally {
    for (const p of tree) signal(p, 'SIGKILL');
  }
  return tree;
}

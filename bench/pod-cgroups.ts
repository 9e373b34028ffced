import { promises as fsp } from 'fs';
import * as path from 'path';

/**
 * Cgroup parents for the bench's pods, one per pod, as the kubelet gives every pod its own
 * (kubepods/<qos>/pod<uid> under the cgroupfs driver): a runtime then reads a pod's totals from
 * that cgroup, as it does under a kubelet, rather than summing its containers under Docker's
 * shared parent. A path only under the cgroupfs driver; Docker (or runc) makes the directories.
 */
export class PodCgroups {
  private readonly made: string[] = [];
  private readonly root: string;

  /** `section` names the bench section, so two sections' pods never share a parent. */
  constructor(section: string) {
    this.root = `/crishim-bench-${process.pid}-${section}`;
  }

  /** A parent for one more pod, nested as the kubelet's are. */
  next(): string {
    const parent = `${this.root}/pod${this.made.length}`;
    this.made.push(parent);
    return parent;
  }

  /** Removes every parent handed out, and their root, in every hierarchy: empty once their pods are gone. */
  async removeAll(): Promise<void> {
    const hierarchies = await fsp.readdir('/sys/fs/cgroup').catch(() => [] as string[]);
    for (const dir of [...this.made, this.root])
      for (const h of ['', ...hierarchies])
        await fsp.rmdir(path.posix.join('/sys/fs/cgroup', h, dir)).catch(() => undefined);
    this.made.length = 0;
  }
}

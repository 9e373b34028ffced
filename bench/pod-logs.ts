import { mkdirSync, rmSync } from 'fs';
import * as os from 'os';
import * as path from 'path';

/**
 * Log directories for the bench's pods, laid out as the kubelet lays out /var/log/pods: it
 * makes `<namespace>_<name>_<uid>/<container>/` before RunPodSandbox and CreateContainer and
 * gives each container `<container>/<restart count>.log`. With them, every runtime under load
 * keeps a container log per container, as under a kubelet: crishim's copy of Docker's
 * json-file (src/logs/), cri-dockerd's and containerd's own. Without them the load costs
 * crishim about half the CPU that a standalone kubelet's 110 pods do.
 */
export class PodLogDirs {
  private readonly bySandbox = new Map<string, string>();

  constructor(private readonly root = path.join(os.tmpdir(), `crishim-bench-pod-logs-${process.pid}`)) {}

  /** Makes the pod's directory and its container's; answers the sandbox's `log_directory`. */
  make(metadata: { namespace: string; name: string; uid: string }, container: string): string {
    const dir = path.join(this.root, `${metadata.namespace}_${metadata.name}_${metadata.uid}`);
    mkdirSync(path.join(dir, container), { recursive: true });
    return dir;
  }

  /** Remembers which sandbox logs in `dir`, so `remove` can find it by id. */
  own(sandboxId: string, dir: string): void {
    this.bySandbox.set(sandboxId, dir);
  }

  /** After RemovePodSandbox, as the kubelet's garbage collection does. */
  remove(sandboxId: string): void {
    const dir = this.bySandbox.get(sandboxId);
    if (!dir) return;
    this.bySandbox.delete(sandboxId);
    rmSync(dir, { recursive: true, force: true });
  }

  /** Everything, at the bench's end. */
  removeAll(): void {
    this.bySandbox.clear();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * The Kubernetes binaries the cluster tests run: built elsewhere from a Kubernetes tree (never
 * part of this repository) and named by KUBE_BIN_DIR. Missing binaries fail the run loudly.
 */
import { accessSync, constants } from 'fs';
import * as path from 'path';

export const CONTROL_PLANE = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kubectl'];

export interface KubeBinaries {
  dir: string;
  /** The absolute path of one binary of the folder. */
  path(name: string): string;
}

export function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `names` from KUBE_BIN_DIR; throws naming every one that is missing or not executable. */
export function kubeBinaries(names: readonly string[], env: NodeJS.ProcessEnv = process.env): KubeBinaries {
  const dir = env.KUBE_BIN_DIR;
  if (!dir)
    throw new Error(
      'KUBE_BIN_DIR is not set: name a folder holding ' +
        `${names.join(', ')} built from a Kubernetes v1.26+ tree (docs/kubernetes.md, "Running a cluster on crishim")`,
    );
  const missing = names.filter((n) => !executable(path.join(dir, n)));
  if (missing.length > 0) throw new Error(`KUBE_BIN_DIR=${dir} lacks ${missing.join(', ')}`);
  return { dir: path.resolve(dir), path: (name) => path.resolve(dir, name) };
}

import type * as Docker from '../docker/types';
import type { SandboxCheckpoint } from '../checkpoint/store';
import type { ServiceDeps } from '../service-deps';
import { ATTEMPT_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL, TYPE_LABEL, TYPE_SANDBOX } from '../labels';
import { parseName } from '../cri/naming';
import { findAnyContainer } from '../state/lookup';
import type { ReadOptions } from '../state/store';

/** A sandbox as crishim knows it: its pause container, its checkpoint, or both. */
export interface SandboxRecord {
  id: string;
  container?: Docker.ContainerInspectInfo;
  checkpoint?: SandboxCheckpoint;
}

export interface SandboxMeta {
  name: string;
  namespace: string;
  uid: string;
  attempt: number;
}

/** Pod metadata from our labels, falling back to the dockershim name (cri-dockerd containers). */
export function metadataFromLabels(labels: Record<string, string> | undefined, dockerName: string): SandboxMeta {
  const l = labels ?? {};
  const parsed = parseName(dockerName);
  const attemptLabel = l[ATTEMPT_LABEL] !== undefined ? Number(l[ATTEMPT_LABEL]) : NaN;
  return {
    name: l[POD_NAME_LABEL] ?? parsed?.pod.name ?? '',
    namespace: l[POD_NAMESPACE_LABEL] ?? parsed?.pod.namespace ?? '',
    uid: l[POD_UID_LABEL] ?? parsed?.pod.uid ?? '',
    attempt: Number.isInteger(attemptLabel) ? attemptLabel : (parsed?.pod.attempt ?? 0),
  };
}

export function isSandboxContainer(labels: Record<string, string> | undefined): boolean {
  return labels?.[TYPE_LABEL] === TYPE_SANDBOX;
}

/** Resolves a sandbox id (or unique prefix) through Docker, then the checkpoints; undefined when unknown. */
export async function findSandbox(
  deps: ServiceDeps,
  idOrPrefix: string,
  opts?: ReadOptions,
): Promise<SandboxRecord | undefined> {
  const container = await findAnyContainer(deps, idOrPrefix, opts);
  if (container) {
    if (!isSandboxContainer(container.Config.Labels)) return undefined;
    return { id: container.Id, container, checkpoint: await deps.checkpoints.read(container.Id) };
  }
  const ids = (await deps.checkpoints.list()).filter((id) => id.startsWith(idOrPrefix));
  if (ids.length !== 1) return undefined;
  const checkpoint = await deps.checkpoints.read(ids[0]);
  return checkpoint ? { id: ids[0], checkpoint } : undefined;
}

/** Pod metadata of a record, from the container when there is one, else from the checkpoint. */
export function recordMetadata(rec: SandboxRecord): SandboxMeta {
  if (rec.container) return metadataFromLabels(rec.container.Config.Labels, rec.container.Name);
  const cp = rec.checkpoint;
  return {
    name: cp?.name ?? '',
    namespace: cp?.namespace ?? '',
    uid: cp?.crishim?.uid ?? '',
    attempt: cp?.crishim?.attempt ?? 0,
  };
}

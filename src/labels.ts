import { invalidArgument } from './errors';

/**
 * Docker labels crishim puts on its containers. The keys are the ones dockershim
 * and cri-dockerd use, so `docker ps`, existing tooling and a node switched over
 * from cri-dockerd all recognise the same containers.
 */
export const TYPE_LABEL = 'io.kubernetes.docker.type';
export const TYPE_SANDBOX = 'podsandbox';
export const TYPE_CONTAINER = 'container';
export const SANDBOX_ID_LABEL = 'io.kubernetes.sandbox.id';
export const POD_NAME_LABEL = 'io.kubernetes.pod.name';
export const POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
export const POD_UID_LABEL = 'io.kubernetes.pod.uid';
export const CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';
export const CONTAINER_LOGPATH_LABEL = 'io.kubernetes.container.logpath';
/** crishim's own: the metadata attempt, since names with `_` defeat parsing it back from the Docker name. */
export const ATTEMPT_LABEL = 'io.crishim.attempt';
/** crishim's own: creation time in ns (Docker's list call only has seconds; status and list must agree). */
export const CREATED_LABEL = 'io.crishim.created';
/**
 * crishim's own: the root directory of the crishim that created a sandbox. Start-up
 * reconciliation only cleans up its own half-made sandboxes, never those of another
 * crishim sharing the Docker Engine (tests, or two instances on one host).
 */
export const ROOT_LABEL = 'io.crishim.root';
/** crishim's own: the CRI runtime handler, so ListPodSandbox reports it without reading checkpoints. */
export const RUNTIME_HANDLER_LABEL = 'io.crishim.runtime-handler';
/** crishim's own: the hugepage limits, carried from create to start (Docker has no field for them). */
export const HUGEPAGE_LIMITS_LABEL = 'io.crishim.hugepage-limits';
/** crishim's own: the image as the user named it (`user_specified_image`), for ContainerStatus. */
export const USER_IMAGE_LABEL = 'io.crishim.user-image';
/** CRI annotations travel as labels with this prefix (Docker has no annotations). */
export const ANNOTATION_PREFIX = 'annotation.';

/**
 * crishim's own: which of the pod/container identity labels crishim added itself
 * (the kubelet usually sends them as CRI labels; other clients do not), so that
 * exactly the client's labels are reported back.
 */
export const IMPLICIT_LABEL = 'io.crishim.implicit-labels';

/** Labels crishim owns; never reported back as CRI labels. */
const INTERNAL = new Set([
  TYPE_LABEL,
  SANDBOX_ID_LABEL,
  CONTAINER_LOGPATH_LABEL,
  ATTEMPT_LABEL,
  CREATED_LABEL,
  IMPLICIT_LABEL,
  ROOT_LABEL,
  HUGEPAGE_LIMITS_LABEL,
  RUNTIME_HANDLER_LABEL,
  USER_IMAGE_LABEL,
]);

/** Prefix of every label crishim keeps for itself. */
const CRISHIM_PREFIX = 'io.crishim.';
/** Keys crishim writes and later trusts (never taken from a request). */
const OWNED = new Set([
  TYPE_LABEL,
  SANDBOX_ID_LABEL,
  CONTAINER_LOGPATH_LABEL,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
  CONTAINER_NAME_LABEL,
]);

/**
 * Refuses request labels that would collide with crishim's own: a client's
 * `io.kubernetes.container.logpath` would point StartContainer/RemoveContainer at
 * any host file, `io.crishim.*` would hide labels or fake hugepage limits,
 * `annotation.*` would come back as an annotation, and identity labels that differ
 * from the metadata would make a pod report itself as another (kube-system/...).
 * The kubelet sends the identity labels with the metadata's values: those pass.
 */
export function checkRequestLabels(
  field: string,
  labels: Record<string, string> | undefined,
  identity: Record<string, string>,
): void {
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (k in identity) {
      if (v !== identity[k])
        throw invalidArgument(
          `${field}[${JSON.stringify(k)}] must equal the metadata's value ${JSON.stringify(identity[k])}`,
        );
      continue;
    }
    if (OWNED.has(k) || k.startsWith(CRISHIM_PREFIX) || k.startsWith(ANNOTATION_PREFIX)) {
      throw invalidArgument(`${field}[${JSON.stringify(k)}] is reserved for crishim's own labels`);
    }
  }
}

/**
 * Builds the Docker label map from CRI labels, annotations, our private keys
 * (`internal`, always set) and the identity labels tooling expects (`identity`,
 * set when the client did not send them, and then hidden from CRI answers).
 */
export function makeLabels(
  criLabels: Record<string, string>,
  annotations: Record<string, string>,
  internal: Record<string, string>,
  identity: Record<string, string> = {},
): Record<string, string> {
  const out: Record<string, string> = { ...criLabels };
  for (const [k, v] of Object.entries(annotations)) out[ANNOTATION_PREFIX + k] = v;
  const implicit = Object.keys(identity).filter((k) => !(k in criLabels));
  for (const k of implicit) out[k] = identity[k];
  if (implicit.length > 0) out[IMPLICIT_LABEL] = implicit.join(',');
  return Object.assign(out, internal);
}

/** Splits Docker labels back into CRI labels and annotations. */
export function splitLabels(labels: Record<string, string> | undefined): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const out = { labels: {} as Record<string, string>, annotations: {} as Record<string, string> };
  const implicit = new Set((labels?.[IMPLICIT_LABEL] ?? '').split(',').filter(Boolean));
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (k.startsWith(ANNOTATION_PREFIX)) out.annotations[k.slice(ANNOTATION_PREFIX.length)] = v;
    else if (!INTERNAL.has(k) && !implicit.has(k)) out.labels[k] = v;
  }
  return out;
}

/** True when every selector pair is present with the same value (CRI label_selector semantics). */
export function matchesSelector(labels: Record<string, string>, selector: Record<string, string> | undefined): boolean {
  for (const [k, v] of Object.entries(selector ?? {})) {
    if (labels[k] !== v) return false;
  }
  return true;
}

/**
 * dockershim-compatible Docker container names:
 *   sandbox:   k8s_POD_<pod>_<namespace>_<uid>_<attempt>
 *   container: k8s_<container>_<pod>_<namespace>_<uid>_<attempt>
 * A random suffix `_<hex>` may follow when a name clashed with a leftover.
 */
const PREFIX = 'k8s';
const SANDBOX_NAME = 'POD';
const SEP = '_';

export interface SandboxNameParts {
  name: string;
  namespace: string;
  uid: string;
  attempt: number;
}

export interface ContainerNameParts {
  containerName: string;
  attempt: number;
}

export function sandboxName(m: SandboxNameParts): string {
  return [PREFIX, SANDBOX_NAME, m.name, m.namespace, m.uid, String(m.attempt)].join(SEP);
}

export function containerName(
  containerNameValue: string,
  attempt: number,
  pod: Omit<SandboxNameParts, 'attempt'>,
): string {
  return [PREFIX, containerNameValue, pod.name, pod.namespace, pod.uid, String(attempt)].join(SEP);
}

/** Parses a Docker name (with or without Docker's leading `/`); undefined when not one of ours. */
export function parseName(
  dockerName: string,
): { kind: 'sandbox' | 'container'; container: string; pod: SandboxNameParts } | undefined {
  const parts = dockerName.replace(/^\//, '').split(SEP);
  if (parts[0] !== PREFIX || (parts.length !== 6 && parts.length !== 7)) return undefined;
  const attempt = Number(parts[5]);
  if (!Number.isInteger(attempt) || attempt < 0) return undefined;
  const pod = { name: parts[2], namespace: parts[3], uid: parts[4], attempt };
  return parts[1] === SANDBOX_NAME
    ? { kind: 'sandbox', container: SANDBOX_NAME, pod }
    : { kind: 'container', container: parts[1], pod };
}

/** Appends a random suffix, as dockershim does, when the plain name is taken by a leftover. */
export function withRandomSuffix(name: string): string {
  return `${name}${SEP}${Math.floor(Math.random() * 0xffffffff)
    .toString(16)
    .padStart(8, '0')}`;
}

import { invalidArgument } from '../errors';

/** Longest name we accept: a DNS subdomain's limit, well above what the kubelet sends. */
export const MAX_NAME_LENGTH = 253;
/** Docker ids are 64 hex chars; clients may pass unique prefixes. */
const ID_RE = /^[0-9a-f]{1,64}$/;

/** Rejects what could escape a path or confuse Docker's name parser. */
export function checkName(
  field: string,
  value: string | undefined,
  opts: { required?: boolean } = { required: true },
): string {
  const v = value ?? '';
  if (!v) {
    if (opts.required === false) return v;
    throw invalidArgument(`${field} must not be empty`);
  }
  if (v.length > MAX_NAME_LENGTH) throw invalidArgument(`${field} is longer than ${MAX_NAME_LENGTH} characters`);
  if (v.includes('/')) throw invalidArgument(`${field} ${JSON.stringify(v)} must not contain '/'`);
  if (v.includes('..')) throw invalidArgument(`${field} ${JSON.stringify(v)} must not contain '..'`);
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(v)) throw invalidArgument(`${field} must not contain control characters`);
  return v;
}

/** Validates a sandbox/container id argument (required, hex). */
export function checkId(field: string, value: string | undefined): string {
  const v = value ?? '';
  if (!v) throw invalidArgument(`${field} must not be empty`);
  if (!ID_RE.test(v)) throw invalidArgument(`${field} ${JSON.stringify(v.slice(0, 80))} is not a valid id`);
  return v;
}

export interface MetadataLike {
  name?: string;
  namespace?: string;
  uid?: string;
  attempt?: number;
}

/** Metadata of a pod sandbox: name, namespace and uid are required by the naming scheme. */
export function checkSandboxMetadata(m: MetadataLike | null | undefined): Required<MetadataLike> {
  if (!m) throw invalidArgument('config.metadata must be set');
  return {
    name: checkName('metadata.name', m.name),
    namespace: checkName('metadata.namespace', m.namespace),
    uid: checkName('metadata.uid', m.uid),
    attempt: m.attempt ?? 0,
  };
}

/** Label/annotation keys become Docker labels; keep them printable and bounded. */
export function checkLabelMap(field: string, map: Record<string, string> | undefined): Record<string, string> {
  const out = map ?? {};
  for (const k of Object.keys(out)) {
    if (!k) throw invalidArgument(`${field} has an empty key`);
    if (k.length > 1024) throw invalidArgument(`${field} key ${JSON.stringify(k.slice(0, 40))}... is too long`);
    // eslint-disable-next-line no-control-regex
    if (/[\x00]/.test(k) || /[\x00]/.test(out[k])) throw invalidArgument(`${field} ${JSON.stringify(k)} contains NUL`);
  }
  return out;
}

/** `0-3,5`: comma-separated CPUs/nodes or ascending ranges (the kernel's cpuset list format). */
const CPUSET_RE = /^\d+(-\d+)?(,\d+(-\d+)?)*$/;

/** A cpuset list as cgroups accept it; empty means "not set". */
export function checkCpuset(field: string, value: string | undefined): string {
  const v = value ?? '';
  if (!v) return v;
  if (!CPUSET_RE.test(v))
    throw invalidArgument(`${field} ${JSON.stringify(v.slice(0, 80))} is not a cpuset list like "0-3,5"`);
  for (const part of v.split(',')) {
    const [lo, hi] = part.split('-').map(Number);
    if (hi !== undefined && hi < lo)
      throw invalidArgument(`${field} ${JSON.stringify(v)}: range ${part} is descending`);
  }
  return v;
}

/** One resolv.conf token: it is written verbatim, so a newline would inject lines and a blank would split it. */
export function checkResolvToken(field: string, value: string): string {
  if (!value) throw invalidArgument(`${field} must not be empty`);
  // eslint-disable-next-line no-control-regex
  if (/[\s\x00-\x1f\x7f]/.test(value))
    throw invalidArgument(
      `${field} ${JSON.stringify(value.slice(0, 80))} must not contain whitespace or control characters`,
    );
  return value;
}

/** A cgroup parent is a path Docker joins under the cgroup root: no climbing out of it. */
export function checkCgroupParent(field: string, value: string | undefined): string {
  const v = value ?? '';
  if (v.includes('\0')) throw invalidArgument(`${field} must not contain NUL`);
  if (v.split('/').includes('..'))
    throw invalidArgument(`${field} ${JSON.stringify(v.slice(0, 80))} must not contain '..' segments`);
  return v;
}

/** Sysctl names and values end up in /proc/sys writes and OCI specs: one line each, no NUL. */
export function checkSysctls(field: string, map: Record<string, string> | undefined): Record<string, string> {
  const out = map ?? {};
  for (const [k, v] of Object.entries(out)) {
    if (!k) throw invalidArgument(`${field} has an empty name`);
    if (/[\n\r\0]/.test(k))
      throw invalidArgument(`${field} name ${JSON.stringify(k.slice(0, 80))} contains a newline or NUL`);
    if (/[\n\r\0]/.test(v)) throw invalidArgument(`${field}[${JSON.stringify(k)}] value contains a newline or NUL`);
  }
  return out;
}

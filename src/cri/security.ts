import { constants, existsSync, promises as fsp, readFileSync } from 'fs';
import { internal, invalidArgument } from '../errors';

/** CRI SecurityProfile as proto-loader delivers it. */
export interface ProfileLike {
  profile_type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhost_ref: string;
}

/** Largest Localhost seccomp profile read: Docker's own default profile is about 20 KiB. */
export const SECCOMP_PROFILE_MAX_BYTES = 1024 * 1024;

/** The Localhost profile file a seccomp setting names; undefined for the built-in choices. */
export function seccompLocalhostFile(
  profile: ProfileLike | null | undefined,
  legacyPath: string | undefined,
): string | undefined {
  if (profile) return profile.profile_type === 'Localhost' ? profile.localhost_ref : undefined;
  const p = legacyPath ?? '';
  return p.startsWith('localhost/') ? p.slice('localhost/'.length) : undefined;
}

/**
 * Docker `--security-opt seccomp=...` for a CRI profile. The structured field wins
 * over the deprecated path string. Nothing set means unconfined, as Kubernetes
 * defines it (the kubelet sends RuntimeDefault explicitly when it wants it).
 * A Localhost profile must have been read first (`loadSeccompProfile`): `loaded` is its JSON.
 */
export function seccompSecurityOpt(
  profile: ProfileLike | null | undefined,
  legacyPath: string | undefined,
  loaded?: string,
): string[] {
  const localhost = (): string[] => {
    if (loaded === undefined) throw internal('seccomp Localhost profile used before it was loaded');
    return [`seccomp=${loaded}`];
  };
  if (profile) {
    switch (profile.profile_type) {
      case 'RuntimeDefault':
        return [];
      case 'Unconfined':
        return ['seccomp=unconfined'];
      case 'Localhost':
        return localhost();
      default:
        throw invalidArgument(`unknown seccomp profile_type ${JSON.stringify(profile.profile_type)}`);
    }
  }
  const p = legacyPath ?? '';
  if (p === 'runtime/default' || p === 'docker/default') return [];
  if (!p || p === 'unconfined') return ['seccomp=unconfined'];
  if (p.startsWith('localhost/')) return localhost();
  throw invalidArgument(`unknown seccomp profile ${JSON.stringify(p)}`);
}

/** Reads the Localhost profile a setting names (if any) and returns the Docker security options. */
export async function resolveSeccomp(
  profile: ProfileLike | null | undefined,
  legacyPath: string | undefined,
): Promise<string[]> {
  const file = seccompLocalhostFile(profile, legacyPath);
  return seccompSecurityOpt(profile, legacyPath, file === undefined ? undefined : await loadSeccompProfile(file));
}

const SCMP_ACTION = /^SCMP_ACT_(KILL|KILL_PROCESS|KILL_THREAD|TRAP|ERRNO|TRACE|ALLOW|LOG|NOTIFY)$/;

/** Shape checks that tell a seccomp profile from any other JSON file (no content is ever quoted). */
function checkProfileShape(file: string, v: unknown): void {
  const bad = (what: string): never => {
    throw invalidArgument(`seccomp localhost profile ${file} is not a seccomp profile: ${what}`);
  };
  if (typeof v !== 'object' || v === null || Array.isArray(v)) bad('not a JSON object');
  const o = v as Record<string, unknown>;
  if (typeof o.defaultAction !== 'string' || !SCMP_ACTION.test(o.defaultAction))
    bad('defaultAction must be an SCMP_ACT_* action');
  for (const key of ['architectures', 'syscalls', 'archMap'] as const) {
    if (o[key] !== undefined && !Array.isArray(o[key])) bad(`${key} must be a list`);
  }
  for (const [i, s] of ((o.syscalls as unknown[] | undefined) ?? []).entries()) {
    const sc = s as Record<string, unknown> | null;
    if (typeof sc !== 'object' || sc === null) bad(`syscalls[${i}] must be an object`);
    if (typeof sc!.action !== 'string' || !SCMP_ACTION.test(sc!.action))
      bad(`syscalls[${i}].action must be an SCMP_ACT_* action`);
    const names = sc!.names ?? (sc!.name !== undefined ? [sc!.name] : undefined);
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string'))
      bad(`syscalls[${i}] must name its syscalls`);
  }
}

/**
 * Docker wants the profile's JSON itself, not its path (the CLI reads the file client-side too).
 * Read off the event loop, and only a regular file of bounded size: opening a FIFO waits for
 * a writer and /dev/zero never ends. O_NONBLOCK keeps the open itself from waiting.
 * Errors never quote the file: it may be any root-readable file (/etc/shadow).
 */
export async function loadSeccompProfile(file: string): Promise<string> {
  if (!file.startsWith('/'))
    throw invalidArgument(`seccomp localhost profile ${JSON.stringify(file)} must be an absolute path`);
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    throw invalidArgument(
      `seccomp localhost profile ${file} cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let text: string;
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw invalidArgument(`seccomp localhost profile ${file} is not a regular file`);
    if (st.size > SECCOMP_PROFILE_MAX_BYTES)
      throw invalidArgument(`seccomp localhost profile ${file} is larger than ${SECCOMP_PROFILE_MAX_BYTES} bytes`);
    // one byte more than the limit tells a file that grew since the stat
    const buf = Buffer.alloc(SECCOMP_PROFILE_MAX_BYTES + 1);
    let len = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, len, buf.length - len, len);
      if (bytesRead === 0) break;
      len += bytesRead;
      if (len > SECCOMP_PROFILE_MAX_BYTES)
        throw invalidArgument(`seccomp localhost profile ${file} is larger than ${SECCOMP_PROFILE_MAX_BYTES} bytes`);
    }
    text = buf.subarray(0, len).toString('utf8');
  } finally {
    await fh.close();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidArgument(`seccomp localhost profile ${file} is not valid JSON`);
  }
  checkProfileShape(file, parsed);
  return JSON.stringify(parsed);
}

let appArmorCache: boolean | undefined;
/**
 * Whether this host enforces AppArmor as runc sees it: the kernel module's switch on and its
 * securityfs directory there. Where only the first holds (securityfs not mounted), runc drops
 * a profile silently, so it counts as off.
 */
export function hostHasAppArmor(): boolean {
  if (appArmorCache === undefined) {
    try {
      appArmorCache =
        existsSync('/sys/kernel/security/apparmor') &&
        readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').startsWith('Y');
    } catch {
      appArmorCache = false;
    }
  }
  return appArmorCache;
}

/**
 * Whether AppArmor has profile `name` loaded, from its list in securityfs; undefined where that
 * list cannot be read (securityfs not mounted where crishim runs): runc then decides at start.
 */
export function appArmorProfileLoaded(
  name: string,
  list = '/sys/kernel/security/apparmor/profiles',
): boolean | undefined {
  let text: string;
  try {
    text = readFileSync(list, 'utf8');
  } catch {
    return undefined;
  }
  // one profile a line: `name (enforce)`
  return text.split('\n').some((line) => line.startsWith(`${name} (`));
}

/**
 * Docker `--security-opt apparmor=...`. Docker ignores it where AppArmor is off, so a
 * Localhost profile would silently run unconfined: refused there, as containerd does. A profile
 * not loaded is refused at create, as containerd does too: Docker takes it and runc fails the
 * start, after the kubelet was told the container exists.
 */
export function apparmorSecurityOpt(
  profile: ProfileLike | null | undefined,
  legacyName: string | undefined,
  appArmor: () => boolean = hostHasAppArmor,
  loaded: (name: string) => boolean | undefined = appArmorProfileLoaded,
): string[] {
  const localhost = (name: string): string[] => {
    if (!appArmor())
      throw invalidArgument(
        `apparmor profile ${JSON.stringify(name)} requested, but AppArmor is not enabled on this host`,
      );
    if (loaded(name) === false)
      throw invalidArgument(
        `apparmor profile ${JSON.stringify(name)} is not loaded on this host (load it with apparmor_parser first)`,
      );
    return [`apparmor=${name}`];
  };
  if (profile) {
    switch (profile.profile_type) {
      case 'RuntimeDefault':
        return [];
      case 'Unconfined':
        return ['apparmor=unconfined'];
      case 'Localhost':
        return localhost(profile.localhost_ref.replace(/^localhost\//, ''));
      default:
        throw invalidArgument(`unknown apparmor profile_type ${JSON.stringify(profile.profile_type)}`);
    }
  }
  const p = legacyName ?? '';
  if (!p || p === 'runtime/default') return [];
  if (p === 'unconfined') return ['apparmor=unconfined'];
  if (p.startsWith('localhost/')) return localhost(p.slice('localhost/'.length));
  throw invalidArgument(`unknown apparmor profile ${JSON.stringify(p)}`);
}

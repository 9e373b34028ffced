import { readFileSync } from 'fs';
import { invalidArgument } from '../server/errors';

/** CRI SecurityProfile as proto-loader delivers it. */
export interface ProfileLike {
  profile_type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhost_ref: string;
}

/**
 * Docker `--security-opt seccomp=...` for a CRI profile. The structured field wins
 * over the deprecated path string. Nothing set means unconfined, as Kubernetes
 * defines it (the kubelet sends RuntimeDefault explicitly when it wants it).
 */
export function seccompSecurityOpt(profile: ProfileLike | null | undefined, legacyPath: string | undefined): string[] {
  if (profile) {
    switch (profile.profile_type) {
      case 'RuntimeDefault':
        return [];
      case 'Unconfined':
        return ['seccomp=unconfined'];
      case 'Localhost':
        return [`seccomp=${readProfile(profile.localhost_ref)}`];
    }
  }
  const p = legacyPath ?? '';
  if (p === 'runtime/default' || p === 'docker/default') return [];
  if (!p || p === 'unconfined') return ['seccomp=unconfined'];
  if (p.startsWith('localhost/')) return [`seccomp=${readProfile(p.slice('localhost/'.length))}`];
  throw invalidArgument(`unknown seccomp profile ${JSON.stringify(p)}`);
}

/** Docker wants the profile's JSON itself, not its path (the CLI reads the file client-side too). */
function readProfile(file: string): string {
  if (!file.startsWith('/')) throw invalidArgument(`seccomp localhost profile ${JSON.stringify(file)} must be an absolute path`);
  try {
    return JSON.stringify(JSON.parse(readFileSync(file, 'utf8')));
  } catch (err) {
    throw invalidArgument(`seccomp localhost profile ${file}: ${(err as Error).message}`);
  }
}

/** Docker `--security-opt apparmor=...`; Docker ignores it where AppArmor is off. */
export function apparmorSecurityOpt(profile: ProfileLike | null | undefined, legacyName: string | undefined): string[] {
  if (profile) {
    switch (profile.profile_type) {
      case 'RuntimeDefault':
        return [];
      case 'Unconfined':
        return ['apparmor=unconfined'];
      case 'Localhost':
        return [`apparmor=${profile.localhost_ref.replace(/^localhost\//, '')}`];
    }
  }
  const p = legacyName ?? '';
  if (!p || p === 'runtime/default') return [];
  if (p === 'unconfined') return ['apparmor=unconfined'];
  if (p.startsWith('localhost/')) return [`apparmor=${p.slice('localhost/'.length)}`];
  throw invalidArgument(`unknown apparmor profile ${JSON.stringify(p)}`);
}

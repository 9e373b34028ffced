import { InvalidArgumentError } from 'commander';

/**
 * How each flag's value is checked and normalised (commander argument parsers): a bad value
 * stops the daemon at start with the flag's rule, never later at first use.
 */

/** Our levels, plus the logrus names cri-dockerd units pass, mapped to the nearest of ours. */
export const LOG_LEVEL_ALIASES: Readonly<Record<string, string>> = {
  error: 'error',
  warn: 'warn',
  info: 'info',
  debug: 'debug',
  warning: 'warn',
  trace: 'debug',
  fatal: 'error',
  panic: 'error',
};

export function logLevel(value: string): string {
  const level = LOG_LEVEL_ALIASES[value];
  if (!level) throw new InvalidArgumentError(`--log-level must be one of ${Object.keys(LOG_LEVEL_ALIASES).join(', ')}`);
  return level;
}

/** An absolute cgroup path such as /system.slice/crishim.service; `..` could escape the hierarchy. */
export function cgroupPath(value: string): string {
  if (value === '') return value;
  if (!value.startsWith('/') || value.split('/').includes('..')) {
    throw new InvalidArgumentError(
      '--runtime-cgroups must be an absolute cgroup path without "..", e.g. /system.slice/crishim.service',
    );
  }
  return value;
}

export function oneOf<T extends string>(name: string, allowed: readonly T[]) {
  return (value: string): T => {
    if (!(allowed as readonly string[]).includes(value)) {
      throw new InvalidArgumentError(`${name} must be one of ${allowed.join(', ')}`);
    }
    return value as T;
  };
}

/** Docker's size syntax for log-opts: a number with an optional k, m or g unit; at least 1 MiB (smaller rotates too often to follow). */
export function logSize(value: string): string {
  const m = /^(\d+)([kmg]?)$/i.exec(value.trim());
  const units: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
  if (!m || Number(m[1]) * units[m[2].toLowerCase()] < 1024 ** 2)
    throw new InvalidArgumentError('must be a size of at least 1m, e.g. 10m or 1g');
  return `${m[1]}${m[2].toLowerCase()}`;
}

/** max-file 1 makes Docker truncate the file in place instead of rotating it: nothing could follow that. */
export function logFiles(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 2) throw new InvalidArgumentError('must be an integer of at least 2');
  return n;
}

/** A whole number of `unit`s where 0 turns the feature off. */
export function offOrWhole(unit: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`must be a whole number of ${unit} (0: off)`);
    return n;
  };
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

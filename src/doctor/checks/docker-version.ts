import type { Check } from '../types';

/** Docker Engine API 1.41 (Engine 20.10) is the oldest crishim is tested against. */
export const MIN_API_VERSION = '1.41';

/** Compares dotted versions numerically (`1.9` < `1.41`). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

export const dockerVersionCheck: Check = {
  name: 'docker-version',
  async run({ engine }) {
    if (!engine.reachable)
      return {
        name: this.name,
        status: 'fail',
        found: 'not known: Docker does not answer',
        action: 'see docker-endpoint',
      };
    const found = `Docker Engine ${engine.version ?? 'unknown'}, API ${engine.apiVersion ?? 'unknown'} negotiated`;
    if (!engine.apiVersion || compareVersions(engine.apiVersion, MIN_API_VERSION) < 0) {
      return {
        name: this.name,
        status: 'warn',
        found,
        action: `upgrade Docker to an engine with API ${MIN_API_VERSION} or later (Docker 20.10+)`,
      };
    }
    return { name: this.name, status: 'ok', found };
  },
};

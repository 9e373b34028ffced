import { randomBytes } from 'crypto';

/**
 * Single-use, expiring tokens for streaming URLs. The URL is handed to the
 * kubelet over CRI and then to whoever the kubelet proxies; the token is the
 * only credential, so it is unguessable (128 random bits) and dies on first use.
 */
export interface TokenStore<T> {
  issue(value: T): string;
  /** Returns the value once; `unknown` also covers already used tokens. */
  consume(token: string): { ok: true; value: T } | { ok: false; reason: 'unknown' | 'expired' };
  readonly size: number;
  close(): void;
}

export interface TokenStoreOptions {
  ttlMs?: number;
  now?: () => number;
}

export function createTokenStore<T>(opts: TokenStoreOptions = {}): TokenStore<T> {
  const ttlMs = opts.ttlMs ?? 60_000;
  const now = opts.now ?? Date.now;
  const entries = new Map<string, { value: T; expires: number }>();
  // sweep so tokens nobody redeems do not pile up; unref: never keeps the process alive
  const sweep = setInterval(
    () => {
      const t = now();
      for (const [k, e] of entries) if (e.expires <= t) entries.delete(k);
    },
    Math.max(1000, Math.min(ttlMs, 30_000)),
  );
  sweep.unref();
  return {
    issue(value: T): string {
      const token = randomBytes(16).toString('base64url');
      entries.set(token, { value, expires: now() + ttlMs });
      return token;
    },
    consume(token: string) {
      const e = entries.get(token);
      if (!e) return { ok: false, reason: 'unknown' };
      entries.delete(token);
      if (e.expires <= now()) return { ok: false, reason: 'expired' };
      return { ok: true, value: e.value };
    },
    get size() {
      return entries.size;
    },
    close() {
      clearInterval(sweep);
      entries.clear();
    },
  };
}

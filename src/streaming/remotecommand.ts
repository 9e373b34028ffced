/**
 * Kubernetes remotecommand protocol constants and payloads shared by the SPDY
 * and WebSocket transports (k8s.io/apimachinery/pkg/util/remotecommand).
 */

export const SPDY_REMOTECOMMAND_PROTOCOLS = [
  'v4.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
] as const;
export const SPDY_PORTFORWARD_PROTOCOLS = ['portforward.k8s.io'] as const;
export const WS_REMOTECOMMAND_PROTOCOLS = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'channel.k8s.io',
  'base64.channel.k8s.io',
] as const;
export const WS_PORTFORWARD_PROTOCOLS = [
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'portforward.k8s.io',
] as const;

export const STREAM_PROTOCOL_HEADER = 'x-stream-protocol-version';
export const ACCEPTED_PROTOCOLS_HEADER = 'X-Accepted-Stream-Protocol-Versions';

export interface TerminalSize {
  width: number;
  height: number;
}

/** How a session ended, as reported on the error stream/channel. */
export type SessionOutcome = { kind: 'exit'; exitCode: number; cmd?: string[] } | { kind: 'error'; message: string };

/** metav1.Status as the v4+ error stream carries it. */
export interface MetaStatus {
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: { causes: { reason?: string; message: string }[] };
  code?: number;
}

export function outcomeStatus(o: SessionOutcome): MetaStatus {
  if (o.kind === 'exit' && o.exitCode === 0) return { metadata: {}, status: 'Success' };
  if (o.kind === 'exit') {
    const what = o.cmd
      ? `error executing command ${JSON.stringify(o.cmd)}, exit code ${o.exitCode}`
      : `exit code ${o.exitCode}`;
    return {
      metadata: {},
      status: 'Failure',
      message: `command terminated with non-zero exit code: ${what}`,
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: String(o.exitCode) }] },
    };
  }
  return {
    metadata: {},
    status: 'Failure',
    message: o.message,
    reason: 'InternalError',
    details: { causes: [{ message: o.message }] },
    code: 500,
  };
}

/**
 * Bytes for the error stream: v4+ speaks JSON Status (Success included);
 * older versions write the error text and nothing at all on success.
 */
export function errorStreamPayload(protocol: string, o: SessionOutcome): Buffer | undefined {
  const status = outcomeStatus(o);
  if (/^v[45]\./.test(protocol)) return Buffer.from(JSON.stringify(status));
  return status.status === 'Success' ? undefined : Buffer.from(status.message ?? 'error');
}

/** Whether the protocol version has a resize stream/channel (v3+). */
export function supportsResize(protocol: string): boolean {
  return /^v[345]\./.test(protocol);
}

/**
 * The first client protocol the server supports (client order wins, as in
 * apimachinery's httpstream.Handshake); undefined when none match.
 */
export function negotiate(clientProtocols: readonly string[], serverProtocols: readonly string[]): string | undefined {
  return clientProtocols.find((p) => serverProtocols.includes(p));
}

/** Splits comma-separated and repeated header values. */
export function headerValues(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v])
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * Incremental decoder for the resize stream: client-go writes one JSON object
 * per event (`{"Width":80,"Height":24}`), possibly split or coalesced across frames.
 */
export function createResizeDecoder(onSize: (s: TerminalSize) => void): (chunk: Buffer) => void {
  let buf = '';
  return (chunk: Buffer) => {
    buf += chunk.toString('utf8');
    for (;;) {
      const start = buf.indexOf('{');
      if (start < 0) {
        buf = '';
        return;
      }
      const end = buf.indexOf('}', start);
      if (end < 0) {
        buf = buf.slice(start);
        return;
      }
      const text = buf.slice(start, end + 1);
      buf = buf.slice(end + 1);
      try {
        const v = JSON.parse(text) as { Width?: unknown; Height?: unknown };
        const width = Number(v.Width);
        const height = Number(v.Height);
        if (
          Number.isInteger(width) &&
          Number.isInteger(height) &&
          width > 0 &&
          height > 0 &&
          width < 65536 &&
          height < 65536
        ) {
          onSize({ width, height });
        }
      } catch {
        // a malformed event is dropped; the next one may be fine
      }
    }
  };
}

/**
 * Holds the latest terminal size until the session subscribes (a client may send
 * one before the exec starts), then forwards every later one.
 */
export function resizeRelay(): { push(size: TerminalSize): void; onResize(listener: (s: TerminalSize) => void): void } {
  let last: TerminalSize | undefined;
  let listener: ((s: TerminalSize) => void) | undefined;
  return {
    push(size) {
      last = size;
      listener?.(size);
    },
    onResize(l) {
      listener = l;
      if (last) l(last);
    },
  };
}

import type { IncomingHttpHeaders } from 'http';
import type { Duplex } from 'stream';
import { parsePort, type StreamRequest } from './requests';
import type { TokenStore } from './tokens';

export type Transport = 'spdy' | 'websocket';

/** An HTTP answer that ends the connection instead of upgrading it. */
export interface HttpRefusal {
  status: number;
  text: string;
  body: string;
}

export type UpgradeRoute =
  | { ok: true; request: StreamRequest; url: URL; transport: Transport }
  | {
      ok: false;
      refusal: HttpRefusal;
      /** set when a token was presented but is unusable */ tokenProblem?: { kind: string; reason: string };
    };

const refuse = (status: number, text: string, body: string): { ok: false; refusal: HttpRefusal } => ({
  ok: false,
  refusal: { status, text, body },
});

/**
 * Decides what an upgrade request is for: `/<kind>/<token>`, the token redeemed
 * (single use: a refused transport still spends it), and SPDY/3.1 or WebSocket.
 */
export function routeUpgrade(
  req: { url?: string; headers: IncomingHttpHeaders },
  tokens: Pick<TokenStore<StreamRequest>, 'consume'>,
): UpgradeRoute {
  const url = new URL(req.url ?? '/', 'http://streaming');
  const m = /^\/(exec|attach|portforward)\/([A-Za-z0-9_-]+)$/.exec(url.pathname);
  if (!m) return refuse(404, 'Not Found', 'not found\n');
  const redeemed = tokens.consume(m[2]);
  if (!redeemed.ok) {
    const r =
      redeemed.reason === 'expired'
        ? refuse(401, 'Unauthorized', 'token expired\n')
        : refuse(404, 'Not Found', 'unknown or already used token\n');
    return { ...r, tokenProblem: { kind: m[1], reason: redeemed.reason } };
  }
  const request = redeemed.value;
  if (request.kind !== m[1]) return refuse(404, 'Not Found', 'not found\n');
  const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
  if (upgrade.startsWith('spdy/')) return { ok: true, request, url, transport: 'spdy' };
  if (upgrade === 'websocket') return { ok: true, request, url, transport: 'websocket' };
  return refuse(400, 'Bad Request', 'expected Upgrade: SPDY/3.1 or websocket\n');
}

/**
 * The ports a WebSocket port-forward relays: the `port`/`ports` query when
 * given (the kubelet's WebSocket clients name them there), else the request's.
 * SPDY clients name the port on each stream instead.
 */
export function webSocketPorts(url: URL, requested: number[]): { ports: number[] } | { refusal: HttpRefusal } {
  const q = [...url.searchParams.getAll('port'), ...url.searchParams.getAll('ports').flatMap((v) => v.split(','))];
  let ports = requested;
  if (q.length) {
    const parsed = q.map((v) => parsePort(v));
    if (parsed.some((p) => p === undefined))
      return { refusal: { status: 400, text: 'Bad Request', body: `invalid port in ${q.join(',')}\n` } };
    ports = parsed as number[];
  }
  if (!ports.length) return { refusal: { status: 400, text: 'Bad Request', body: 'no ports to forward\n' } };
  return { ports };
}

/** Writes a plain HTTP error on an upgrade socket and ends it. */
export function httpError(socket: Duplex, r: HttpRefusal): void {
  socket.end(
    `HTTP/1.1 ${r.status} ${r.text}\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(r.body)}\r\n\r\n${r.body}`,
  );
}

/** The streaming server's units with fakes: upgrade routing, port selection, URL base, session dispatch. */
import { PassThrough } from 'stream';
import winston from 'winston';
import { baseUrlFor } from '../../src/streaming/http-listener';
import type { PodDialer } from '../../src/streaming/pod-dialer';
import type { StreamRequest } from '../../src/streaming/requests';
import type { StreamSet } from '../../src/streaming/session';
import { SessionDispatch, type SessionBackends } from '../../src/streaming/session-dispatch';
import type { StreamTransports, Upgrade } from '../../src/streaming/transports';
import { routeUpgrade, webSocketPorts } from '../../src/streaming/upgrade-route';
import type { TokenStore } from '../../src/streaming/tokens';

const quiet = winston.createLogger({ silent: true });
const EXEC: StreamRequest = {
  kind: 'exec',
  containerId: 'c1',
  cmd: ['ls'],
  tty: false,
  stdin: true,
  stdout: true,
  stderr: true,
};
const PF: StreamRequest = { kind: 'portforward', podSandboxId: 'p1', ports: [80] };

/** Tokens as a map; every consume is recorded. */
function fakeTokens(
  values: Record<string, StreamRequest | 'expired'>,
): Pick<TokenStore<StreamRequest>, 'consume'> & { consumed: string[] } {
  const consumed: string[] = [];
  return {
    consumed,
    consume(token) {
      consumed.push(token);
      const v = values[token];
      if (v === undefined) return { ok: false, reason: 'unknown' };
      if (v === 'expired') return { ok: false, reason: 'expired' };
      delete values[token];
      return { ok: true, value: v };
    },
  };
}

describe('routeUpgrade', () => {
  const up = (url: string, upgrade?: string) => ({ url, headers: upgrade ? { upgrade } : {} });

  it('routes a valid token to its request and transport, once', () => {
    const tokens = fakeTokens({ tok: EXEC });
    const r = routeUpgrade(up('/exec/tok', 'SPDY/3.1'), tokens);
    expect(r).toMatchObject({ ok: true, request: EXEC, transport: 'spdy' });
    expect(routeUpgrade(up('/exec/tok', 'SPDY/3.1'), tokens)).toMatchObject({
      ok: false,
      refusal: { status: 404 },
      tokenProblem: { kind: 'exec', reason: 'unknown' },
    });
  });

  it('refuses unknown paths without touching tokens, expired tokens with 401, a kind mismatch and a plain upgrade', () => {
    const tokens = fakeTokens({ old: 'expired', pf: PF, ws: EXEC, plain: EXEC });
    expect(routeUpgrade(up('/nope/x', 'websocket'), tokens)).toMatchObject({
      ok: false,
      refusal: { status: 404, body: 'not found\n' },
    });
    expect(tokens.consumed).toEqual([]);
    expect(routeUpgrade(up('/exec/old', 'websocket'), tokens)).toMatchObject({
      ok: false,
      refusal: { status: 401 },
      tokenProblem: { reason: 'expired' },
    });
    expect(routeUpgrade(up('/exec/pf', 'websocket'), tokens)).toMatchObject({ ok: false, refusal: { status: 404 } });
    expect(routeUpgrade(up('/exec/ws', 'WebSocket'), tokens)).toMatchObject({ ok: true, transport: 'websocket' });
    expect(routeUpgrade(up('/exec/plain', 'h2c'), tokens)).toMatchObject({ ok: false, refusal: { status: 400 } });
    // a refused transport still spent the token
    expect(routeUpgrade(up('/exec/plain', 'websocket'), tokens)).toMatchObject({ ok: false, refusal: { status: 404 } });
  });
});

describe('webSocketPorts', () => {
  const u = (q: string) => new URL(`http://s/portforward/t${q}`);
  it('takes the query ports over the request, and refuses bad or no ports', () => {
    expect(webSocketPorts(u(''), [80])).toEqual({ ports: [80] });
    expect(webSocketPorts(u('?port=81&ports=82,83'), [80])).toEqual({ ports: [81, 82, 83] });
    expect(webSocketPorts(u('?port=70000'), [80])).toMatchObject({
      refusal: { status: 400, body: 'invalid port in 70000\n' },
    });
    expect(webSocketPorts(u(''), [])).toMatchObject({ refusal: { status: 400, body: 'no ports to forward\n' } });
  });
});

describe('baseUrlFor', () => {
  it('advertises loopback for unspecified addresses and brackets IPv6', () => {
    expect(baseUrlFor('0.0.0.0', 1234)).toBe('http://127.0.0.1:1234');
    expect(baseUrlFor('::1', 5)).toBe('http://[::1]:5');
    expect(baseUrlFor('::', 5, 'node.example')).toBe('http://node.example:5');
    expect(baseUrlFor('10.0.0.1', 7)).toBe('http://10.0.0.1:7');
  });
});

describe('SessionDispatch', () => {
  function make(opts: { refuse?: boolean; dialFails?: boolean } = {}) {
    const calls: string[] = [];
    const streams = { protocol: 'v4.channel.k8s.io' } as StreamSet;
    let dialerClosed = false;
    const dialer = { close: () => (dialerClosed = true) } as unknown as PodDialer;
    const transports: Pick<StreamTransports, 'remoteCommand' | 'portForward'> = {
      remoteCommand: async (_up, wants) => {
        calls.push(`remote ${JSON.stringify(wants)}`);
        return opts.refuse ? undefined : streams;
      },
      portForward: async (_up, ports, d, id) => {
        calls.push(`pf ${id} ${ports.join(',')} ${d === dialer}`);
        return !opts.refuse;
      },
    };
    const backends: SessionBackends = {
      dialPod: async (id) => {
        calls.push(`dial ${id}`);
        if (opts.dialFails) throw new Error(`pod ${id} has no network namespace`);
        return dialer;
      },
      exec: async (id, o, s) => void calls.push(`exec ${id} ${o.cmd.join(' ')} ${s === streams}`),
      attach: async (id, o, s) => void calls.push(`attach ${id} ${o.stdin} ${s === streams}`),
    };
    const socket = new PassThrough();
    let written = '';
    socket.on('data', (c: Buffer) => (written += c.toString()));
    const upgrade = (transport: Upgrade['transport']): Upgrade => ({
      req: {} as Upgrade['req'],
      socket,
      head: Buffer.alloc(0),
      transport,
    });
    return {
      d: new SessionDispatch({ transports, backends, log: quiet }),
      calls,
      upgrade,
      written: () => written,
      dialerClosed: () => dialerClosed,
    };
  }
  const url = (q = '') => new URL(`http://s/x/t${q}`);

  it('exec and attach: the transport gets the wanted streams, the backend runs with them', async () => {
    const t = make();
    await t.d.serve(EXEC, url(), t.upgrade('spdy'));
    await t.d.serve(
      { kind: 'attach', containerId: 'c2', tty: true, stdin: false, stdout: true, stderr: false },
      url(),
      t.upgrade('websocket'),
    );
    expect(t.calls).toEqual([
      'remote {"stdin":true,"stdout":true,"stderr":true,"tty":false}',
      'exec c1 ls true',
      'remote {"stdin":false,"stdout":true,"stderr":false,"tty":true}',
      'attach c2 false true',
    ]);
  });

  it('a refused upgrade runs no session', async () => {
    const t = make({ refuse: true });
    await t.d.serve(EXEC, url(), t.upgrade('spdy'));
    expect(t.calls).toEqual(['remote {"stdin":true,"stdout":true,"stderr":true,"tty":false}']);
  });

  it('port-forward: WebSocket query ports, SPDY the request ports; a refused upgrade closes the dialer', async () => {
    const t = make();
    await t.d.serve(PF, url('?port=8080'), t.upgrade('websocket'));
    await t.d.serve(PF, url('?port=8080'), t.upgrade('spdy'));
    expect(t.calls).toEqual(['dial p1', 'pf p1 8080 true', 'dial p1', 'pf p1 80 true']);
    expect(t.dialerClosed()).toBe(false);
    const r = make({ refuse: true });
    await r.d.serve(PF, url(), r.upgrade('spdy'));
    expect(r.dialerClosed()).toBe(true);
  });

  it('port-forward: bad ports are refused before dialing; a failed dial answers 500 naming why', async () => {
    const t = make();
    await t.d.serve(PF, url('?port=0'), t.upgrade('websocket'));
    expect(t.calls).toEqual([]);
    expect(t.written()).toMatch(/^HTTP\/1.1 400 Bad Request/);
    const f = make({ dialFails: true });
    await f.d.serve(PF, url(), f.upgrade('spdy'));
    expect(f.written()).toMatch(/^HTTP\/1.1 500 Internal Server Error[\s\S]*pod p1 has no network namespace/);
  });
});

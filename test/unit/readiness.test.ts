import type { EngineSnapshot } from '../../src/docker/engine-info';
import { createLogger } from '../../src/logging/logger';
import type { NetworkStatus } from '../../src/network/types';
import { createNotifier, formatAssignments, type Notifier } from '../../src/readiness/notify';
import { describeState, startReadiness, watchdogIntervalMs } from '../../src/readiness/readiness';

const quiet = createLogger('error', 'text');
const up: EngineSnapshot = { reachable: true, version: '20.10.24', runtimes: [], checkedAt: new Date() };
const down: EngineSnapshot = { reachable: false, error: 'connect ECONNREFUSED', runtimes: [], checkedAt: new Date() };
const netOk: NetworkStatus = { ready: true, reason: '', message: '', configName: 'crishim' };
const noCni: NetworkStatus = {
  ready: false,
  reason: 'NetworkPluginNotReady',
  message: 'network plugin is not ready: no CNI configuration file in /etc/cni/net.d',
};

function recorder(): Notifier & { sent: Array<Record<string, string>> } {
  const sent: Array<Record<string, string>> = [];
  return { enabled: true, sent, send: async (f) => void sent.push(f) };
}

function fakeEngine(initial: EngineSnapshot) {
  let snap = initial;
  const recovered: Array<() => void> = [];
  return {
    current: () => snap,
    onRecovered: (fn: () => void) => void recovered.push(fn),
    set(s: EngineSnapshot) {
      snap = s;
      for (const fn of recovered) fn();
    },
  };
}

describe('systemd readiness', () => {
  it('READY=1 with the status once Docker answers and the socket serves', async () => {
    const n = recorder();
    const r = startReadiness({
      notifier: n,
      engine: fakeEngine(up),
      network: { status: () => netOk },
      dockerEndpoint: '',
      socketPath: '/run/c.sock',
      logger: quiet,
      intervalMs: 60_000,
    });
    await r.update();
    expect(n.sent).toEqual([{ STATUS: 'serving CRI on /run/c.sock (Docker 20.10.24, network crishim)', READY: '1' }]);
    expect(r.ready).toBe(true);
    await r.stopping();
  });

  it('waits for Docker (STATUS says so), then sends READY=1 when it recovers', async () => {
    const n = recorder();
    const engine = fakeEngine(down);
    const r = startReadiness({
      notifier: n,
      engine,
      network: { status: () => netOk },
      dockerEndpoint: 'unix:///d.sock',
      socketPath: '/s',
      logger: quiet,
      intervalMs: 60_000,
    });
    await r.update();
    expect(n.sent).toEqual([{ STATUS: 'waiting for Docker at unix:///d.sock: connect ECONNREFUSED' }]);
    expect(r.ready).toBe(false);
    engine.set(up);
    await r.update();
    expect(n.sent[1]).toMatchObject({ READY: '1' });
    expect(n.sent.filter((m) => m.READY)).toHaveLength(1);
    await r.stopping();
    expect(n.sent[n.sent.length - 1]).toEqual({ STOPPING: '1', STATUS: 'shutting down' });
  });

  it('is ready without a CNI config but says it waits for one, and updates when it comes', async () => {
    const n = recorder();
    let net = noCni;
    const r = startReadiness({
      notifier: n,
      engine: fakeEngine(up),
      network: { status: () => net },
      dockerEndpoint: '',
      socketPath: '/s',
      logger: quiet,
      intervalMs: 60_000,
    });
    await r.update();
    expect(n.sent[0].READY).toBe('1');
    expect(n.sent[0].STATUS).toContain(
      'waiting for a CNI config: network plugin is not ready: no CNI configuration file in /etc/cni/net.d',
    );
    await r.update();
    expect(n.sent).toHaveLength(1); // nothing changed: nothing sent
    net = netOk;
    await r.update();
    expect(n.sent[1]).toEqual({ STATUS: 'serving CRI on /s (Docker 20.10.24, network crishim)' });
    await r.stopping();
  });

  it('describeState names the default endpoint when none is configured', () => {
    expect(describeState(down, netOk, '', '/s').status).toBe(
      'waiting for Docker at the default Docker endpoint: connect ECONNREFUSED',
    );
  });

  it('pings the watchdog at half of WATCHDOG_USEC, only for the process it names', async () => {
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '60000000' }, 7)).toBe(30_000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '60000000', WATCHDOG_PID: '7' }, 7)).toBe(30_000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '60000000', WATCHDOG_PID: '8' }, 7)).toBeUndefined();
    expect(watchdogIntervalMs({}, 7)).toBeUndefined();
    const n = recorder();
    const r = startReadiness({
      notifier: n,
      engine: fakeEngine(up),
      network: { status: () => netOk },
      dockerEndpoint: '',
      socketPath: '/s',
      logger: quiet,
      intervalMs: 60_000,
      env: { WATCHDOG_USEC: '40000' },
      pid: 1,
    });
    await new Promise((res) => setTimeout(res, 100));
    await r.stopping();
    const pings = n.sent.filter((m) => m.WATCHDOG === '1').length;
    expect(pings).toBeGreaterThanOrEqual(2);
    const after = n.sent.length;
    await new Promise((res) => setTimeout(res, 60));
    expect(n.sent.length).toBe(after); // stopped
  });
});

describe('notifier (systemd-notify)', () => {
  it('does nothing without NOTIFY_SOCKET', async () => {
    const calls: string[][] = [];
    const n = createNotifier({ env: {}, run: async (_f, a) => void calls.push(a) });
    expect(n.enabled).toBe(false);
    await n.send({ READY: '1' });
    expect(calls).toEqual([]);
  });

  it('runs systemd-notify with our pid, in order, passing only NOTIFY_SOCKET', async () => {
    const calls: Array<{ file: string; args: string[]; env: NodeJS.ProcessEnv }> = [];
    const n = createNotifier({
      env: { NOTIFY_SOCKET: '/run/systemd/notify', SECRET: 'x' },
      pid: 42,
      find: () => '/usr/bin/systemd-notify',
      run: async (file, args, env) => {
        await new Promise((r) => setTimeout(r, args.includes('STATUS=first') ? 30 : 0));
        calls.push({ file, args, env });
      },
    });
    void n.send({ STATUS: 'first' });
    await n.send({ READY: '1', STATUS: 'two\nlines' });
    expect(calls.map((c) => c.args)).toEqual([
      ['--no-block', '--pid=42', 'STATUS=first'],
      ['--no-block', '--pid=42', 'READY=1', 'STATUS=two lines'],
    ]);
    expect(calls[0].env).toEqual({ NOTIFY_SOCKET: '/run/systemd/notify' });
  });

  it('reports a missing systemd-notify or a failing one once, without throwing', async () => {
    const errors: string[] = [];
    const missing = createNotifier({
      env: { NOTIFY_SOCKET: '/n' },
      find: () => undefined,
      onError: (e) => errors.push(e.message),
    });
    await missing.send({ READY: '1' });
    await missing.send({ READY: '1' });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('systemd-notify was not found');
    const failing = createNotifier({
      env: { NOTIFY_SOCKET: '/n' },
      find: () => '/bin/false',
      run: async () => {
        throw new Error('exit 1');
      },
      onError: (e) => errors.push(e.message),
    });
    await expect(failing.send({ READY: '1' })).resolves.toBeUndefined();
    expect(errors[1]).toBe('exit 1');
  });

  it('formats one assignment per field', () => {
    expect(formatAssignments({ A: '1', B: 'x\r\ny' })).toEqual(['A=1', 'B=x y']);
  });
});

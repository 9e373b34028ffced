import * as winston from 'winston';
import { DockerUnreachableError } from '../../src/docker/errors';
import { createEngineInfo, engineForRuntime, type EngineInfo } from '../../src/docker/engine-info';
import { FakeEngine } from '../support/fake-engine';

function fakeDocker() {
  const api = new FakeEngine();
  const state = {
    up: true,
    set runtimes(names: string[]) {
      api.systemInfo = { ...api.systemInfo, Runtimes: Object.fromEntries(names.map((r) => [r, {}])) };
    },
    get infoCalls(): number {
      return api.count('info');
    },
  };
  api.fail('ping', () => (state.up ? undefined : new DockerUnreachableError('ping docker: connect ECONNREFUSED')));
  return { state, api };
}

describe('engine info cache', () => {
  let engine: EngineInfo | undefined;
  afterEach(() => engine?.close());

  it('calls recovery handlers when docker comes back, not on the first probe', async () => {
    const { state, api } = fakeDocker();
    engine = createEngineInfo(api, winston.createLogger({ silent: true }), { intervalMs: 3_600_000 });
    let recovered = 0;
    engine.onRecovered(() => recovered++);
    await engine.refresh();
    expect(recovered).toBe(0);
    state.up = false;
    await engine.refresh();
    expect(engine.current().reachable).toBe(false);
    state.up = true;
    await engine.refresh();
    await engine.refresh();
    expect(recovered).toBe(1);
    // a failed call reported by a handler counts as an outage too
    engine.markUnreachable('ECONNRESET');
    await engine.refresh();
    expect(recovered).toBe(2);
  });

  it('re-reads docker info when forced, even while the cache is fresh', async () => {
    const { state, api } = fakeDocker();
    engine = createEngineInfo(api, winston.createLogger({ silent: true }), { intervalMs: 3_600_000 });
    await engine.refresh();
    const calls = state.infoCalls;
    await engine.refresh();
    expect(state.infoCalls).toBe(calls);
    await engine.refresh({ force: true });
    expect(state.infoCalls).toBe(calls + 1);
  });

  it('asks docker once more before a runtime handler is called unknown', async () => {
    const { state, api } = fakeDocker();
    engine = createEngineInfo(api, winston.createLogger({ silent: true }), { intervalMs: 3_600_000 });
    await engine.refresh();
    state.runtimes = ['runc', 'kata'];
    expect((await engineForRuntime(engine, 'kata')).runtimes).toContain('kata');
    const calls = state.infoCalls;
    expect((await engineForRuntime(engine, 'kata')).runtimes).toContain('kata');
    expect(state.infoCalls).toBe(calls);
    expect((await engineForRuntime(engine, 'nope')).runtimes).not.toContain('nope');
    expect(state.infoCalls).toBe(calls + 1);
  });
});

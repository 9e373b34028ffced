import { spawn } from 'child_process';
import type { Duplex } from 'stream';
import { execSync } from '../../src/rpc/exec-sync';
import { ExecExits } from '../../src/docker/exec-exits';
import type { CallContext } from '../../src/server/rpc';
import type { StreamingServer } from '../../src/streaming/server';
import { TYPE_CONTAINER, TYPE_LABEL } from '../../src/labels';
import { execDieEvent, FakeEngine, inspectInfo } from '../support/fake-engine';
import { recordingLogger } from '../support/recording-logger';

jest.setTimeout(20_000);

/** An engine whose exec output is a real pipe from `sleep`: its end arrives as I/O, as Docker's does. */
class PipedExecEngine extends FakeEngine {
  constructor(
    private readonly runsForSec: number,
    /** Hears each exec's end as the view's event stream would (exec_die), when given. */
    private readonly exits?: ExecExits,
  ) {
    super();
  }

  override async startExec(execId: string, opts: { stdin: boolean; tty: boolean }): Promise<Duplex> {
    await super.startExec(execId, opts);
    const child = spawn('sleep', [String(this.runsForSec)], { stdio: ['ignore', 'pipe', 'ignore'] });
    const e = this.execs.get(execId);
    // the exec's host pid is the child's: a timeout kills it, and nothing else on the host
    if (e) Object.assign(e.info, { Pid: child.pid });
    child.on('exit', () => {
      if (e) Object.assign(e.info, { Running: false, ExitCode: 0, Pid: 0 });
      this.exits?.heard(execDieEvent(execId, '0'));
    });
    return child.stdout as unknown as Duplex;
  }
}

function setup(
  runsForSec: number,
  exits?: ExecExits,
): { run(timeout: string): Promise<unknown>; docker: PipedExecEngine } {
  const docker = new PipedExecEngine(runsForSec, exits);
  const id = docker.addContainer(
    inspectInfo({
      State: { Status: 'running', Running: true, Pid: 1 },
      Config: { Labels: { [TYPE_LABEL]: TYPE_CONTAINER } },
    }),
  );
  const { logger } = recordingLogger('error');
  const handler = execSync({ docker, logger, streaming: {} as StreamingServer, execExits: exits });
  const ctx: CallContext = {
    signal: new AbortController().signal,
    method: 'ExecSync',
    log: logger,
    annotate: () => undefined,
  };
  return { run: (timeout) => handler({ container_id: id, cmd: ['true'], timeout }, ctx), docker };
}

/**
 * Holds the event loop from `fromMs` to `toMs` after now, as a burst of work would. It holds it
 * outside the timers phase (in setImmediate's), so the next turn starts with the due timers.
 */
function holdLoop(fromMs: number, toMs: number): void {
  setTimeout(
    () =>
      setImmediate(() => {
        const until = Date.now() + (toMs - fromMs);
        while (Date.now() < until) {
          /* busy */
        }
      }),
    fromMs,
  );
}

describe('ExecSync timeout', () => {
  it('counts a command that ended while the event loop was held past its timeout', async () => {
    // the command ends at about 0.5 s, its 1 s timer comes due at 1 s; the loop is held from 0.2 s
    // to 1.6 s, so both are due when it turns again
    const { run } = setup(0.5);
    const answer = run('1');
    holdLoop(200, 1600);
    await expect(answer).resolves.toMatchObject({ exit_code: 0 });
  });

  it('still times out a command that runs on past its timeout, and kills it', async () => {
    const { run, docker } = setup(3);
    await expect(run('1')).rejects.toMatchObject({ kind: 'deadline-exceeded' });
    const exec = [...docker.execs.values()][0];
    for (let i = 0; i < 50 && exec?.info.Running; i++) await new Promise((r) => setTimeout(r, 20));
    expect(exec?.info).toMatchObject({ Running: false });
  });
});

describe('ExecSync exit code', () => {
  it('comes from the exec_die event where one is heard, with no exec inspect', async () => {
    const exits = new ExecExits();
    exits.setLive(true);
    const { run, docker } = setup(0.05, exits);
    // the first exec of an engine is inspected for: nothing says yet that this one sends exec_die
    await expect(run('5')).resolves.toMatchObject({ exit_code: 0 });
    const before = docker.count('inspectExec');
    expect(before).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) await expect(run('5')).resolves.toMatchObject({ exit_code: 0 });
    expect(docker.count('inspectExec')).toBe(before);
  });
});

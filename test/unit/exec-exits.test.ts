import { ExecExits } from '../../src/docker/exec-exits';
import { execDieEvent } from '../support/fake-engine';

/** A live ExecExits that has heard one exit already, as it is once a node has run a probe. */
function warmed(kept?: number): ExecExits {
  const exits = new ExecExits(kept);
  exits.setLive(true);
  exits.heard(execDieEvent('first', '0'));
  return exits;
}

describe('ExecExits', () => {
  it('answers an exit heard before anyone waited for it, once', async () => {
    const exits = warmed();
    exits.heard(execDieEvent('e1', '3'));
    await expect(exits.wait('e1', 1000)).resolves.toBe(3);
    // taken: a second wait has nothing to answer and waits its time out
    await expect(exits.wait('e1', 10)).resolves.toBeUndefined();
  });

  it('answers a wait when the exit comes during it', async () => {
    const exits = warmed();
    const waited = exits.wait('e2', 5000);
    setTimeout(() => exits.heard(execDieEvent('e2', '0')), 20);
    await expect(waited).resolves.toBe(0);
  });

  it('gives up after its time when no event comes', async () => {
    const exits = warmed();
    const started = Date.now();
    await expect(exits.wait('never', 50)).resolves.toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('does not wait where no event can be expected', async () => {
    // an engine that has sent no exec_die yet may never send one
    const fresh = new ExecExits();
    fresh.setLive(true);
    const started = Date.now();
    await expect(fresh.wait('e3', 5000)).resolves.toBeUndefined();
    // a stream that is down brings nothing
    const down = warmed();
    down.setLive(false);
    await expect(down.wait('e3', 5000)).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('lets the waiters go when the stream breaks, and waits again only once the new one brings an exit', async () => {
    const exits = warmed();
    const waited = exits.wait('e4', 60_000);
    exits.setLive(false);
    await expect(waited).resolves.toBeUndefined();
    exits.setLive(true);
    const started = Date.now();
    await expect(exits.wait('e5', 5000)).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(1000);
    exits.heard(execDieEvent('e6', '0'));
    const next = exits.wait('e7', 5000);
    exits.heard(execDieEvent('e7', '4'));
    await expect(next).resolves.toBe(4);
  });

  it('leaves the exit codes of failed starts to inspect', async () => {
    const exits = warmed();
    exits.heard(execDieEvent('notfound', '127'));
    exits.heard(execDieEvent('noexec', '126'));
    await expect(exits.wait('notfound', 5000)).resolves.toBeUndefined();
    await expect(exits.wait('noexec', 5000)).resolves.toBeUndefined();
  });

  it('ignores events without an exec id or a numeric exit code', async () => {
    const exits = new ExecExits();
    exits.setLive(true);
    exits.heard(execDieEvent('', '0'));
    exits.heard(execDieEvent('e5', 'oops'));
    // neither counted as a heard exit: nothing is waited for yet
    await expect(exits.wait('e5', 5000)).resolves.toBeUndefined();
  });

  it('forgets the oldest unclaimed exits past its bound', async () => {
    const exits = warmed(3);
    for (const id of ['a', 'b', 'c', 'd']) exits.heard(execDieEvent(id, '1'));
    await expect(exits.wait('a', 10)).resolves.toBeUndefined();
    await expect(exits.wait('d', 10)).resolves.toBe(1);
  });
});

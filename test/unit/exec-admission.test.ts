import { ExecAdmission } from '../../src/streaming/exec-admission';

const never = new AbortController().signal;
const tick = (ms = 5): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('ExecAdmission', () => {
  it('lets in as many as it has slots, then the rest in the order they came', async () => {
    const gate = new ExecAdmission(2, 60_000);
    const order: string[] = [];
    const a = await gate.enter(never);
    const b = await gate.enter(never);
    const c = gate.enter(never).then((r) => (order.push('c'), r));
    const d = gate.enter(never).then((r) => (order.push('d'), r));
    await tick();
    expect(order).toEqual([]);
    expect(gate.load).toEqual({ held: 2, waiting: 2 });
    b();
    b(); // a second call gives back nothing more
    await tick();
    expect(order).toEqual(['c']);
    expect(gate.load).toEqual({ held: 2, waiting: 1 });
    a();
    (await c)();
    (await d)();
    expect(order).toEqual(['c', 'd']);
    expect(gate.load).toEqual({ held: 0, waiting: 0 });
  });

  it('gives a slot to the next caller once its holder has had it for holdMs', async () => {
    const gate = new ExecAdmission(1, 40);
    const slow = await gate.enter(never);
    const t0 = Date.now();
    const next = await gate.enter(never);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(35);
    slow(); // the long command ends later: the slot it lost is not given back twice
    expect(gate.load).toEqual({ held: 1, waiting: 0 });
    next();
    expect(gate.load).toEqual({ held: 0, waiting: 0 });
  });

  it('drops a caller that gives up while waiting, and refuses one that already has', async () => {
    const gate = new ExecAdmission(1, 60_000);
    const held = await gate.enter(never);
    const quit = new AbortController();
    const leaving = gate.enter(quit.signal);
    const staying = gate.enter(never);
    quit.abort();
    await expect(leaving).rejects.toMatchObject({ kind: 'cancelled' });
    expect(gate.load).toEqual({ held: 1, waiting: 1 });
    await expect(gate.enter(quit.signal)).rejects.toMatchObject({ kind: 'cancelled' });
    held();
    (await staying)();
    expect(gate.load).toEqual({ held: 0, waiting: 0 });
  });
});

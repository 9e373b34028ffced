import { ExecAdmission, type AdmissionLimits } from '../../src/streaming/exec-admission';

const never = new AbortController().signal;
/** A gate that is always narrow: `slots` at once. */
const fixed = (slots: number, holdMs: number): AdmissionLimits => ({
  wide: slots,
  narrow: slots,
  narrowForMs: 0,
  holdMs,
});
const tick = (ms = 5): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('ExecAdmission', () => {
  it('lets in as many as it has slots, then the rest in the order they came', async () => {
    const gate = new ExecAdmission(fixed(2, 60_000));
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
    const gate = new ExecAdmission(fixed(1, 40));
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
    const gate = new ExecAdmission(fixed(1, 60_000));
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

  it('lets many in until a command times out, then few for a while, then many again', async () => {
    const gate = new ExecAdmission({ wide: 3, narrow: 1, narrowForMs: 60, holdMs: 60_000 });
    const first = await Promise.all([gate.enter(never), gate.enter(never), gate.enter(never)]);
    gate.overloaded();
    for (const r of first) r();
    const a = await gate.enter(never);
    let b: (() => void) | undefined;
    const waiting = gate.enter(never).then((r) => (b = r));
    await tick();
    expect(b).toBeUndefined();
    expect(gate.load).toEqual({ held: 1, waiting: 1 });
    a();
    await waiting;
    await tick(80); // the narrow spell is over: three at once again
    const wide = await Promise.all([gate.enter(never), gate.enter(never)]);
    expect(gate.load).toEqual({ held: 3, waiting: 0 });
    for (const r of [b, ...wide]) r?.();
  });

  it('gives the slots a narrow spell frees to those already waiting before a newcomer', async () => {
    const gate = new ExecAdmission({ wide: 2, narrow: 1, narrowForMs: 30, holdMs: 60_000 });
    const a = await gate.enter(never);
    gate.overloaded();
    let b: (() => void) | undefined;
    const waiting = gate.enter(never).then((r) => (b = r));
    await tick(50); // the spell is over; nobody has released since
    let c: (() => void) | undefined;
    const late = gate.enter(never).then((r) => (c = r));
    await waiting;
    await tick();
    expect(b).toBeDefined();
    expect(c).toBeUndefined();
    expect(gate.load).toEqual({ held: 2, waiting: 1 });
    a();
    await late;
    for (const r of [b, c]) r?.();
    expect(gate.load).toEqual({ held: 0, waiting: 0 });
  });
});

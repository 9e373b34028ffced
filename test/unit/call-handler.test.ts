import { EventEmitter } from 'events';
import * as grpc from '@grpc/grpc-js';
import winston from 'winston';
import { wrapHandler } from '../../src/server/call-handler';
import type { CallContext, UnaryImpl } from '../../src/server/rpc';
import { recordingLogger } from '../support/recording-logger';
import { failedPrecondition } from '../../src/errors';

/** The part of a grpc-js unary call the handler touches. */
class FakeCall extends EventEmitter {
  cancelled = false;
  constructor(
    readonly request: unknown,
    private readonly deadline: number = Infinity,
  ) {
    super();
  }
  getDeadline(): number {
    return this.deadline;
  }
  cancel(): void {
    this.cancelled = true;
    this.emit('cancelled');
  }
}

type Answer = { err: Partial<grpc.StatusObject> | null; res: unknown };

const unary = (method: string, impl: UnaryImpl<unknown, unknown>, logger: winston.Logger) =>
  wrapHandler(method, impl, false, { logger }) as grpc.handleUnaryCall<unknown, unknown>;

/** Runs `impl` as `method` on `call`; answers what grpc-js would have been given. */
function run(method: string, impl: UnaryImpl<unknown, unknown>, call: FakeCall, logger: winston.Logger) {
  return invoke(unary(method, impl, logger), call);
}

function invoke(handler: grpc.handleUnaryCall<unknown, unknown>, call: FakeCall) {
  return new Promise<Answer>((resolve) =>
    handler(call as unknown as grpc.ServerUnaryCall<unknown, unknown>, (err, res) =>
      resolve({ err: err as Partial<grpc.StatusObject> | null, res }),
    ),
  );
}

/** A handler that waits until its call is aborted and fails with the abort's echo, as dockerode does. */
const waitsForAbort = (seen: CallContext[]) => (_req: unknown, ctx: CallContext) => {
  seen.push(ctx);
  return new Promise<unknown>((_resolve, reject) =>
    ctx.signal.addEventListener('abort', () => reject(new Error('aborted by signal'))),
  );
};

describe('wrapHandler: the call context', () => {
  it('a handler that never takes the signal leaves no cancel listener behind it', async () => {
    const { logger } = recordingLogger('info');
    const call = new FakeCall({}, Date.now() + 60_000);
    let during = -1;
    const out = await run(
      'Version',
      async () => {
        during = call.listenerCount('cancelled');
        return { version: '1' };
      },
      call,
      logger,
    );
    expect(out).toEqual({ err: null, res: { version: '1' } });
    expect(during).toBe(0);
    expect(call.listenerCount('cancelled')).toBe(0);
  });

  it('a signal first asked for after the call was answered arms nothing', async () => {
    const { logger } = recordingLogger('info');
    const call = new FakeCall({}, Date.now() + 20);
    const seen: CallContext[] = [];
    await run('Version', async (_req, ctx) => (seen.push(ctx), {}), call, logger);
    await new Promise((r) => setImmediate(r));
    const late = seen[0].signal;
    expect(call.listenerCount('cancelled')).toBe(0);
    // past the deadline: no timer aborted it
    await new Promise((r) => setTimeout(r, 40));
    expect(late.aborted).toBe(false);
  });

  it('a client that cancels aborts a handler that took the signal: CANCELLED, listener removed after', async () => {
    const { logger } = recordingLogger('info');
    const call = new FakeCall({ container_id: 'c1' });
    const seen: CallContext[] = [];
    const answer = run('StopContainer', waitsForAbort(seen), call, logger);
    await new Promise((r) => setImmediate(r));
    expect(call.listenerCount('cancelled')).toBe(1);
    call.cancel();
    const out = await answer;
    expect(out.err?.code).toBe(grpc.status.CANCELLED);
    expect(out.err?.details).toMatch(/StopContainer cancelled by the client/);
    expect(seen[0].signal.aborted).toBe(true);
    // the listener goes once the call is answered
    await new Promise((r) => setImmediate(r));
    expect(call.listenerCount('cancelled')).toBe(0);
  });

  it('a call already cancelled when the handler takes the signal sees it aborted at once', async () => {
    const { logger } = recordingLogger('info');
    const call = new FakeCall({});
    call.cancel();
    let aborted: boolean | undefined;
    const out = await run(
      'PullImage',
      async (_req, ctx) => {
        aborted = ctx.signal.aborted;
        throw new Error('aborted by signal');
      },
      call,
      logger,
    );
    expect(aborted).toBe(true);
    expect(out.err?.code).toBe(grpc.status.CANCELLED);
  });

  it('the deadline aborts a handler that took the signal: DEADLINE_EXCEEDED', async () => {
    const { logger } = recordingLogger('info');
    const out = await run('CreateContainer', waitsForAbort([]), new FakeCall({}, Date.now() + 30), logger);
    expect(out.err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(out.err?.details).toMatch(/CreateContainer deadline exceeded/);
  });

  it("a handler's own error is answered as it is, signal taken or not", async () => {
    const { logger } = recordingLogger('info');
    const out = await run(
      'StartContainer',
      async (_req, ctx) => {
        void ctx.signal;
        throw new Error('boom');
      },
      new FakeCall({}, Date.now() + 60_000),
      logger,
    );
    expect(out.err?.code).toBe(grpc.status.UNKNOWN);
    expect(out.err?.details).toMatch(/boom/);
  });

  it('logs a read-only call only at debug, following a level changed while running', async () => {
    const { logger, records: lines } = recordingLogger('info');
    // one handler for all three calls, as the server keeps it
    const handler = unary('ListContainers', async () => ({}), logger);
    await invoke(handler, new FakeCall({}));
    expect(lines).toHaveLength(0);
    logger.level = 'debug';
    await invoke(handler, new FakeCall({}));
    expect(lines.map((l) => [l.level, l.message])).toEqual([['debug', 'ListContainers']]);
    logger.level = 'info';
    await invoke(handler, new FakeCall({}));
    expect(lines).toHaveLength(1);
  });

  it('logs an exec probe (ExecSync) at debug, a mutation at info, and a failed probe at warn', async () => {
    const { logger, records: lines } = recordingLogger('info');
    await invoke(
      unary('ExecSync', async () => ({}), logger),
      new FakeCall({}),
    );
    await invoke(
      unary('StopContainer', async () => ({}), logger),
      new FakeCall({}),
    );
    await invoke(
      unary(
        'ExecSync',
        async () => {
          throw failedPrecondition('container c1 is not running');
        },
        logger,
      ),
      new FakeCall({}),
    );
    expect(lines.map((l) => [l.level, l.rpc])).toEqual([
      ['info', 'StopContainer'],
      ['warn', 'ExecSync'],
    ]);
  });

  it("keeps the context's accessors on a shared prototype, none on the context itself", async () => {
    const { logger } = recordingLogger('info');
    const seen: CallContext[] = [];
    const handler = unary('Version', async (_req, ctx) => (seen.push(ctx), {}), logger);
    await invoke(handler, new FakeCall({}));
    await invoke(handler, new FakeCall({}));
    // V8 gives an object's own accessors a pair of old space each: through it a scavenge keeps the
    // call alive until a full GC (src/server/call-handler.ts)
    const own = Object.values(Object.getOwnPropertyDescriptors(seen[0]));
    expect(own.filter((d) => d.get !== undefined || d.set !== undefined)).toEqual([]);
    expect(Object.getPrototypeOf(seen[0])).toBe(Object.getPrototypeOf(seen[1]));
    expect(seen[0].method).toBe('Version');
  });
});

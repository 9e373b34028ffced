import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { JsonFileFollower, type LogLoss } from '../../src/logs/json-file-follower';

/**
 * The rotation follower against a temp dir where the test plays Docker: it appends json lines,
 * and rotates exactly as Docker 20.10 does (close, rename `.n-1` -> `.n` down to the live file
 * -> `.1`, the rename onto the last slot deleting the oldest, then a new live file). The
 * follower's clock is a counter the test moves, so nothing waits on wall-clock time.
 */
class FakeDocker {
  private seq = 0;
  constructor(
    readonly file: string,
    readonly maxFiles: number,
  ) {}

  /** Appends records `n=<seq>` (as whole json lines, like Docker's one write per record). */
  async write(count: number, pad = 0): Promise<void> {
    let out = '';
    for (let i = 0; i < count; i++) {
      this.seq += 1;
      out +=
        JSON.stringify({
          log: `n=${this.seq}${'x'.repeat(pad)}\n`,
          stream: 'stdout',
          time: '2026-11-23T10:00:00.000000001Z',
        }) + '\n';
    }
    await fsp.appendFile(this.file, out);
  }

  async rotate(): Promise<void> {
    for (let i = this.maxFiles - 1; i > 1; i--)
      await fsp.rename(`${this.file}.${i - 1}`, `${this.file}.${i}`).catch(() => undefined);
    await fsp.rename(this.file, `${this.file}.1`);
    await fsp.writeFile(this.file, '');
  }

  get written(): number {
    return this.seq;
  }
}

/** The record numbers in the chunks read so far. */
function numbers(data: Buffer[]): number[] {
  return Buffer.concat(data)
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => Number(/n=(\d+)/.exec((JSON.parse(l) as { log: string }).log)?.[1]));
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('json-file rotation follower', () => {
  let dir: string;
  let file: string;
  let clock: number;
  let losses: LogLoss[];
  const open: JsonFileFollower[] = [];

  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-jsonfile-'));
    file = path.join(dir, 'abc-json.log');
    clock = 0;
    losses = [];
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((f) => f.close()));
    await fsp.rm(dir, { recursive: true, force: true });
  });

  const follower = (chunkBytes = 4096): JsonFileFollower => {
    const f = new JsonFileFollower(file, {
      chunkBytes,
      scanEveryMs: 50,
      now: () => clock,
      onLoss: (l) => losses.push(l),
    });
    open.push(f);
    return f;
  };

  /** Reads until caught up (or `max` chunks). */
  const drain = async (f: JsonFileFollower, into: Buffer[], max = Infinity): Promise<void> => {
    for (let i = 0; i < max; i++) {
      const c = await f.next();
      if (!c) return;
      expect(c.data[c.data.length - 1]).toBe(0x0a);
      into.push(c.data);
    }
  };

  it('reads every line once across rotations, draining the old file before the new one', async () => {
    const d = new FakeDocker(file, 3);
    await d.write(10);
    const f = follower();
    await f.start();
    const got: Buffer[] = [];
    await drain(f, got);
    // lines land in the old file after the last read, then Docker rotates and writes on
    await d.write(5);
    await d.rotate();
    await d.write(7);
    await drain(f, got);
    await d.rotate();
    await d.write(3);
    await d.rotate();
    await d.write(2);
    await drain(f, got);
    expect(numbers(got)).toEqual(range(1, d.written));
    expect(losses).toEqual([]);
  });

  it('keeps reading a file Docker deleted while it was behind, since it opened it in time', async () => {
    const d = new FakeDocker(file, 3);
    await d.write(400, 20); // ~30 KB: many chunks of 4 KiB
    const f = follower();
    await f.start();
    const got: Buffer[] = [];
    await drain(f, got, 1);
    // each rotation happens between two chunks, the scan interval elapsed: the new file is opened
    for (let r = 0; r < 4; r++) {
      await d.rotate();
      await d.write(50, 20);
      clock += 50;
      await drain(f, got, 1);
    }
    // the first file was deleted by Docker two rotations ago; its descriptor still reads it
    await expect(fsp.readdir(dir)).resolves.toHaveLength(3);
    await drain(f, got);
    expect(numbers(got)).toEqual(range(1, d.written));
    expect(losses).toEqual([]);
  });

  it('holds every file when told of each change, however far behind the reading is', async () => {
    const d = new FakeDocker(file, 2);
    await d.write(5);
    const f = follower();
    await f.start();
    const got: Buffer[] = [];
    await drain(f, got, 1);
    // five rotations, each file deleted by the next but one, and not one read meanwhile: only
    // the directory watch's hold() opens them in time
    for (let r = 0; r < 5; r++) {
      await d.rotate();
      await d.write(5);
      clock += 10;
      f.hold();
    }
    await expect(fsp.readdir(dir)).resolves.toHaveLength(2);
    await drain(f, got);
    expect(numbers(got)).toEqual(range(1, d.written));
    expect(losses).toEqual([]);
  });

  it('says so when Docker rotated max-file times between two looks, and goes on without repeating', async () => {
    const d = new FakeDocker(file, 2);
    await d.write(5);
    const f = follower();
    await f.start();
    const got: Buffer[] = [];
    await drain(f, got);
    await d.write(5); // 6..10 stay in the first file, held open
    await d.rotate();
    await d.write(5); // 11..15: a file created and deleted unseen
    await d.rotate();
    await d.write(5); // 16..20 in .1
    await d.rotate();
    await d.write(5); // 21..25 live
    await drain(f, got);
    expect(losses).toHaveLength(1);
    expect(losses[0].exact).toBe(false);
    const n = numbers(got);
    expect(n.slice(0, 10)).toEqual(range(1, 10));
    expect(n.slice(10)).toEqual(range(16, 25));
  });

  it('does not return a line Docker is still writing', async () => {
    const f = follower();
    await fsp.writeFile(file, '{"log":"a\\n","stream":"stdout","time":"2026-11-23T10:00:00Z"}\n{"log":"b');
    await f.start();
    const got: Buffer[] = [];
    await drain(f, got);
    expect(Buffer.concat(got).toString().split('\n').filter(Boolean)).toHaveLength(1);
    await fsp.appendFile(file, '\\n","stream":"stdout","time":"2026-11-23T10:00:01Z"}\n');
    await drain(f, got);
    expect(Buffer.concat(got).toString().split('\n').filter(Boolean)).toHaveLength(2);
  });

  it('returns a line longer than the chunk size whole', async () => {
    const d = new FakeDocker(file, 2);
    await d.write(1, 20_000);
    await d.write(1);
    const f = follower(1024);
    await f.start();
    const got: Buffer[] = [];
    await drain(f, got);
    expect(numbers(got)).toEqual([1, 2]);
  });

  it('resumes at the saved byte after a restart, the file rotated meanwhile, reading nothing twice', async () => {
    const d = new FakeDocker(file, 4);
    await d.write(30);
    const f1 = follower(512);
    await f1.start();
    const got: Buffer[] = [];
    await drain(f1, got, 2);
    const pos = await f1.position();
    expect(pos).toBeDefined();
    await f1.close();
    await d.write(5);
    await d.rotate();
    await d.write(5);
    await d.rotate();
    await d.write(5);
    const f2 = follower(512);
    await f2.start(pos);
    await drain(f2, got);
    expect(numbers(got)).toEqual(range(1, d.written));
    expect(losses).toEqual([]);
  });

  it('reports what a restart lost when the saved file is gone, and starts at the oldest file left', async () => {
    const d = new FakeDocker(file, 2);
    await d.write(30);
    const f1 = follower(512);
    await f1.start();
    const got: Buffer[] = [];
    await drain(f1, got, 1);
    const pos = await f1.position();
    await f1.close();
    await d.rotate();
    await d.write(4); // 31..34
    await d.rotate(); // the saved file is deleted
    await d.write(3); // 35..37
    const f2 = follower();
    await f2.start(pos);
    const after: Buffer[] = [];
    await drain(f2, after);
    expect(numbers(after)).toEqual(range(31, 37));
    expect(losses).toHaveLength(1);
    expect(losses[0].bytes).toBeGreaterThan(0);
    expect(losses[0].files).toBe(1);
  });

  it('does not take a newer file with the same inode number for the saved one', async () => {
    const d = new FakeDocker(file, 2);
    await d.write(10);
    const f1 = follower();
    await f1.start();
    await drain(f1, []);
    const pos = await f1.position();
    await f1.close();
    // same inode, other first line: what a reused inode number looks like
    const forged = { ...(pos ?? { ino: 0, offset: 0, size: 0, head: '' }), head: 'not-the-same' };
    const f2 = follower();
    await f2.start(forged);
    const got: Buffer[] = [];
    await drain(f2, got);
    expect(numbers(got)).toEqual(range(1, 10));
    expect(losses).toHaveLength(1);
  });

  it('waits for the live file to appear and starts with the oldest rotated one', async () => {
    const f = follower();
    await f.start();
    expect(await f.next()).toBeUndefined();
    const d = new FakeDocker(file, 3);
    await d.write(3);
    await d.rotate();
    await d.write(2);
    const got: Buffer[] = [];
    await drain(f, got);
    expect(numbers(got)).toEqual(range(1, 5));
  });
});

import * as protobuf from 'protobufjs';
import { ProtoWriter } from '../../src/server/proto-writer';

/** The same writes through protobufjs's Writer, the reference for the bytes. */
const reference = (write: (w: protobuf.Writer) => void): Buffer => {
  const w = protobuf.Writer.create();
  write(w);
  return Buffer.from(w.finish());
};

describe('ProtoWriter', () => {
  it('writes varints as protobufjs does, at every length boundary', () => {
    const values = [0, 1, 127, 128, 16383, 16384, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 35 + 5, 2 ** 53 - 1];
    const mine = new ProtoWriter(4);
    for (const v of values) mine.tag(1, 0).uint(v);
    const theirs = reference((w) => {
      for (const v of values) w.uint32(8).uint64(v);
    });
    expect(mine.finish().toString('hex')).toBe(theirs.toString('hex'));
  });

  it('writes 64-bit values given as halves, up to 2^64 - 1', () => {
    const halves: Array<[number, number]> = [
      [0, 0],
      [300, 0],
      [0xffffffff, 0],
      [0, 1],
      [0x12345678, 0x1a2b3c4d],
      [0xffffffff, 0xffffffff],
    ];
    const mine = new ProtoWriter(1);
    for (const [low, high] of halves) mine.tag(2, 0).uintLong(low, high);
    const theirs = reference((w) => {
      for (const [low, high] of halves) w.uint32(16).uint64(new protobuf.util.LongBits(low, high).toLong(true));
    });
    expect(mine.finish().toString('hex')).toBe(theirs.toString('hex'));
  });

  it('nests sub-messages whose lengths need one, two and three bytes', () => {
    const sizes = [0, 1, 127, 128, 300, 16383, 16384, 70000];
    const text = (n: number): string => 'é'.repeat(Math.floor(n / 2)) + 'x'.repeat(n % 2);
    const mine = new ProtoWriter(8);
    const theirs = reference((w) => {
      for (const n of sizes) {
        w.uint32(26).fork();
        w.uint32(10).string(text(n));
        w.uint32(18).fork().uint32(8).uint32(n).ldelim();
        w.uint32(26).bytes(Buffer.alloc(n % 200, 7));
        w.ldelim();
      }
    });
    for (const n of sizes) {
      const outer = mine.tag(3, 2).begin();
      mine.tag(1, 2).string(text(n));
      const inner = mine.tag(2, 2).begin();
      mine.tag(1, 0).uint(n);
      mine.end(inner);
      mine.tag(3, 2).bytes(Buffer.alloc(n % 200, 7));
      mine.end(outer);
    }
    expect(mine.finish().toString('hex')).toBe(theirs.toString('hex'));
  });

  it('starts afresh after reset, and hands out copies the next message does not touch', () => {
    const w = new ProtoWriter(2);
    const first = w.tag(1, 2).string('first').finish();
    const second = w.reset().tag(1, 2).string('2nd').finish();
    expect(first).toEqual(reference((r) => r.uint32(10).string('first')));
    expect(second).toEqual(reference((r) => r.uint32(10).string('2nd')));
  });
});

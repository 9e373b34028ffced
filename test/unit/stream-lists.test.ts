import { sendChunks, STREAM_CHUNK } from '../../src/server/stream-chunks';

/** The Stream* RPCs send their List twin's result in chunks: nothing lost, nothing repeated, order kept. */
describe('sendChunks', () => {
  const collect = async (n: number, size?: number): Promise<number[][]> => {
    const sent: number[][] = [];
    const items = Array.from({ length: n }, (_, i) => i);
    await sendChunks(
      items,
      (chunk) => ({ chunk }),
      async (m) => void sent.push(m.chunk),
      size,
    );
    return sent;
  };

  it('splits a result larger than one chunk into full chunks and a remainder, in order', async () => {
    const sent = await collect(2 * STREAM_CHUNK + 7);
    expect(sent.map((c) => c.length)).toEqual([STREAM_CHUNK, STREAM_CHUNK, 7]);
    expect(sent.flat()).toEqual(Array.from({ length: 2 * STREAM_CHUNK + 7 }, (_, i) => i));
  });

  it('sends exactly one message for a result of exactly one chunk, and none for an empty one', async () => {
    expect((await collect(STREAM_CHUNK)).map((c) => c.length)).toEqual([STREAM_CHUNK]);
    expect(await collect(0)).toEqual([]);
  });

  it('waits for each send before the next (flow control of the gRPC stream)', async () => {
    const order: string[] = [];
    await sendChunks(
      [1, 2, 3],
      (c) => c,
      async (c) => {
        order.push(`start ${c[0]}`);
        await new Promise((r) => setTimeout(r, 5));
        order.push(`end ${c[0]}`);
      },
      1,
    );
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  });
});

/** The Stream* RPCs send a list in several messages; the chunking is the same for all of them. */

/** Items per message of the Stream* RPCs: far below the 16 MiB message limit even with many labels. */
export const STREAM_CHUNK = 100;

/** Sends `items` in chunks; an empty result still sends nothing but ends the stream cleanly. */
export async function sendChunks<T, M>(
  items: T[],
  wrap: (chunk: T[]) => M,
  send: (m: M) => Promise<void>,
  size = STREAM_CHUNK,
): Promise<void> {
  for (let i = 0; i < items.length; i += size) await send(wrap(items.slice(i, i + size)));
}

/**
 * A protobuf writer into one growing buffer, for the hand-written stats encoders.
 *
 * protobufjs's Writer queues one operation object per field and a state object per
 * sub-message and lays the bytes out at `finish()`: at 110 pods that was 1.3 MiB of short-lived
 * objects per ListPodSandboxStats, half of the call's garbage. This one writes each byte where
 * it goes. A sub-message gets one byte for its length up front; the rare body of 128 bytes or
 * more is moved right to make room for the longer varint.
 */
/** Writes the varint of `v` (an unsigned 32-bit value) at `p`; answers the position after it. */
export function varint32(b: Buffer, p: number, v: number): number {
  while (v > 127) {
    b[p++] = (v & 127) | 128;
    v >>>= 7;
  }
  b[p++] = v;
  return p;
}

export class ProtoWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialBytes = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  /** Starts a new message, keeping the buffer. */
  reset(): this {
    this.pos = 0;
    return this;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** A field's key: number and wire type. */
  tag(field: number, wire: number): this {
    return this.uint(field * 8 + wire);
  }

  /** A varint of a non-negative integer up to 2^53 (exact as a number). */
  uint(v: number): this {
    this.room(10);
    const b = this.buf;
    let p = this.pos;
    // division, not shifts, above 32 bits; shifts once the value fits
    while (v > 0xffffffff) {
      b[p++] = (v % 128) | 128;
      v = Math.floor(v / 128);
    }
    this.pos = varint32(b, p, v);
    return this;
  }

  /** A varint of a 64-bit value given as its low and high unsigned 32-bit halves. */
  uintLong(low: number, high: number): this {
    this.room(10);
    const b = this.buf;
    let p = this.pos;
    while (high !== 0) {
      b[p++] = (low & 127) | 128;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    this.pos = varint32(b, p, low);
    return this;
  }

  /** A length-delimited UTF-8 string (tag written by the caller). */
  string(s: string): this {
    const n = Buffer.byteLength(s, 'utf8');
    this.uint(n);
    this.room(n);
    this.pos += this.buf.write(s, this.pos, n, 'utf8');
    return this;
  }

  /** Length-delimited bytes (tag written by the caller). */
  bytes(bytes: Uint8Array): this {
    this.uint(bytes.length);
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /** Opens a length-delimited sub-message (after its tag); pass the mark to `end`. */
  begin(): number {
    this.room(1);
    return this.pos++;
  }

  /** Closes the sub-message opened at `mark`, writing its length in front of it. */
  end(mark: number): void {
    const len = this.pos - mark - 1;
    if (len < 128) {
      this.buf[mark] = len;
      return;
    }
    let size = 1;
    for (let v = len; v > 127; v = Math.floor(v / 128)) size++;
    this.room(size - 1);
    this.buf.copyWithin(mark + size, mark + 1, this.pos);
    const body = this.pos + size - 1;
    this.pos = mark;
    this.uint(len);
    this.pos = body;
  }

  /** A copy of what was written: the buffer itself is reused by the next message. */
  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    return out;
  }
}

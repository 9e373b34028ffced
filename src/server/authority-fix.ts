import * as hpack from 'hpack.js';

/**
 * Older gRPC clients send the Unix socket path as HTTP/2 `:authority`: crictl and
 * critest 1.26, and kubelets whose CRI client does not set `localhost` (kubernetes
 * PR 123463, 2024; a 1.26 kubelet run against crishim sends the path).
 * Node's HTTP/2 stack (nghttp2) rejects such a header with PROTOCOL_ERROR before
 * grpc-js sees the call. This shim sits between the socket and grpc-js: it
 * re-encodes each request header block with `:authority: localhost` when the
 * client's value is not a valid authority; every other byte passes unchanged.
 *
 * A client picks its authority once per connection, so the first header block
 * decides: valid there, and the connection passes through untouched from then
 * on (no HPACK work per call for well-formed clients); otherwise every block of
 * the connection is rewritten.
 *
 * accept-connection.ts decides per connection whether the shim is needed at all.
 */

const PREFACE_LENGTH = 24;
const FRAME_HEADER = 9;
const HEADERS = 0x1;
const SETTINGS = 0x4;
const CONTINUATION = 0x9;
const ACK = 0x1;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;
/** HTTP/2's default SETTINGS_HEADER_TABLE_SIZE and SETTINGS_MAX_FRAME_SIZE, which Node keeps. */
const TABLE_SIZE = 4096;
const MAX_FRAME = 16384;

const VALID_AUTHORITY = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%[\]]*$/;

/** Writes an HPACK string length (RFC 7541 5.1, 7-bit prefix, no Huffman flag) at `at`; returns the next offset. */
function writeLength(buf: Buffer, at: number, value: number): number {
  if (value < 0x7f) {
    buf[at++] = value;
    return at;
  }
  buf[at++] = 0x7f;
  for (value -= 0x7f; value >= 0x80; value >>>= 7) buf[at++] = (value & 0x7f) | 0x80;
  buf[at++] = value;
  return at;
}

/** Most bytes a length takes: a 7-bit prefix and four 7-bit groups cover any header (< 2^28 bytes). */
const MAX_LENGTH_BYTES = 5;

/**
 * A header block of literals that touch no HPACK table (RFC 7541 6.2.2 and 6.2.3): nothing is
 * indexed or Huffman-coded, so no encoder state is kept and nghttp2's table stays as it is.
 * Strings are written as bytes (latin1), as hpack.js's decoder read them.
 */
export function literalHeaderBlock(headers: readonly hpack.Header[]): Buffer {
  let room = 0;
  for (const h of headers) room += 1 + 2 * MAX_LENGTH_BYTES + h.name.length + h.value.length;
  const buf = Buffer.allocUnsafe(room);
  let at = 0;
  for (const h of headers) {
    // 0x10: never indexed (a proxy must keep that flag); 0x00: without indexing; the name a literal
    buf[at++] = h.neverIndex ? 0x10 : 0x00;
    for (const str of [h.name, h.value]) {
      at = writeLength(buf, at, str.length);
      at += buf.write(str, at, 'latin1');
    }
  }
  return buf.subarray(0, at);
}

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(FRAME_HEADER);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

/**
 * Largest header block (HEADERS plus its CONTINUATIONs, HPACK-encoded) accepted: Node's
 * default SETTINGS_MAX_HEADER_LIST_SIZE (64 KiB), which nghttp2 would enforce on the decoded
 * list anyway. Without a bound a client could stream CONTINUATION frames forever and we
 * would buffer them all (1 GiB of them grew the daemon to 1.3 GB).
 */
export const MAX_HEADER_BLOCK = 65535;

/** Thrown when a client breaks the limits above; the connection is then destroyed. */
export class HeaderBlockError extends Error {}

/** Rewrites the client-to-server byte stream of one HTTP/2 connection. */
export class AuthorityRewriter {
  /** Unconsumed input, as received: joined only for the (bounded) bytes of one frame. */
  private chunks: Buffer[] = [];
  private queued = 0;
  private prefaceDone = false;
  private readonly decoder = hpack.decompressor.create({ table: { size: TABLE_SIZE } });
  private pending?: {
    streamId: number;
    flags: number;
    priority?: Buffer;
    block: Buffer[];
    size: number;
    raw: Buffer[];
  };
  /** Undecided until the first header block ends; then every byte is passed on as is, or every block rewritten. */
  private mode: 'undecided' | 'passthrough' | 'rewrite' = 'undecided';
  /** Set while the client still owes the ACK of a SETTINGS frame the server side sent before nghttp2 (accept-connection.ts). */
  private ownAckPending: boolean;

  constructor(opts: { ownSettingsSent?: boolean } = {}) {
    this.ownAckPending = opts.ownSettingsSent ?? false;
  }

  /** How the connection was decided, once its first header block has passed and nothing is held back. */
  get decision(): 'undecided' | 'passthrough' | 'rewrite' {
    return this.ownAckPending ? 'undecided' : this.mode;
  }

  /** The first `n` queued bytes (n <= queued), joining chunks only when one is too short. */
  private peek(n: number): Buffer {
    if (this.chunks[0].length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0].subarray(0, n);
  }

  /** Removes and returns the first `n` queued bytes. */
  private take(n: number): Buffer {
    const out = this.peek(n);
    const rest = this.chunks[0].subarray(n);
    if (rest.length > 0) this.chunks[0] = rest;
    else this.chunks.shift();
    this.queued -= n;
    return out;
  }

  /** Feeds bytes from the client; returns the bytes to hand to the server. */
  push(chunk: Buffer): Buffer {
    if (this.decision === 'passthrough' && this.queued === 0) return chunk;
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.queued += chunk.length;
    }
    const out: Buffer[] = [];
    if (!this.prefaceDone) {
      if (this.queued < PREFACE_LENGTH) return Buffer.alloc(0);
      out.push(this.take(PREFACE_LENGTH));
      this.prefaceDone = true;
    }
    while (this.decision !== 'passthrough' && this.queued >= FRAME_HEADER) {
      const head = this.peek(FRAME_HEADER);
      const length = head.readUIntBE(0, 3);
      // we never advertise a larger SETTINGS_MAX_FRAME_SIZE, so a larger frame is a protocol error
      if (length > MAX_FRAME)
        throw new HeaderBlockError(`frame of ${length} bytes exceeds the maximum frame size ${MAX_FRAME}`);
      if (this.queued < FRAME_HEADER + length) break;
      const type = head[3];
      const flags = head[4];
      const streamId = head.readUInt32BE(5) & 0x7fffffff;
      const raw = this.take(FRAME_HEADER + length);
      if (type === SETTINGS && flags & ACK && this.ownAckPending) {
        // the client's first ACK answers the SETTINGS sent before nghttp2's: nghttp2 must not see it
        this.ownAckPending = false;
        continue;
      }
      if (this.mode === 'passthrough') {
        // decided, only that ACK was still to come out: the rest goes as is (a header block
        // re-encoded here would not match nghttp2's HPACK table)
        out.push(raw);
        continue;
      }
      let payload = raw.subarray(FRAME_HEADER);
      if (type === HEADERS) {
        let priority: Buffer | undefined;
        if (flags & PADDED) {
          const pad = payload[0];
          payload = payload.subarray(1, payload.length - pad);
        }
        if (flags & PRIORITY) {
          priority = payload.subarray(0, 5);
          payload = payload.subarray(5);
        }
        this.pending = {
          streamId,
          flags,
          priority,
          block: [Buffer.from(payload)],
          size: payload.length,
          raw: this.mode === 'undecided' ? [Buffer.from(raw)] : [],
        };
        if (flags & END_HEADERS) out.push(this.flush());
      } else if (type === CONTINUATION && this.pending) {
        this.pending.size += payload.length;
        if (this.pending.size > MAX_HEADER_BLOCK)
          throw new HeaderBlockError(`header block exceeds ${MAX_HEADER_BLOCK} bytes`);
        this.pending.block.push(Buffer.from(payload));
        if (this.mode === 'undecided') this.pending.raw.push(Buffer.from(raw));
        if (flags & END_HEADERS) out.push(this.flush());
      } else {
        out.push(raw);
      }
    }
    // decided inside this chunk: whatever follows the first header block goes on as is
    if (this.decision === 'passthrough' && this.queued > 0) out.push(this.take(this.queued));
    return out.length === 1 ? out[0] : Buffer.concat(out);
  }

  private flush(): Buffer {
    const p = this.pending;
    this.pending = undefined;
    if (!p) return Buffer.alloc(0);
    this.decoder.write(Buffer.concat(p.block));
    this.decoder.execute();
    const headers: hpack.Header[] = [];
    let rewritten = false;
    for (let h = this.decoder.read(); h !== null; h = this.decoder.read()) {
      const header = h as hpack.Header;
      if (header.name === ':authority' && !VALID_AUTHORITY.test(header.value)) {
        header.value = 'localhost';
        rewritten = true;
      }
      headers.push(header);
    }
    if (this.mode === 'undecided') {
      // nothing was re-encoded yet, so the server's HPACK table matches the client's: the original bytes can go as they are
      this.mode = rewritten ? 'rewrite' : 'passthrough';
      if (!rewritten) return Buffer.concat(p.raw);
    }
    let block = literalHeaderBlock(headers);
    const frames: Buffer[] = [];
    const firstRoom = MAX_FRAME - (p.priority ? 5 : 0);
    const first = block.subarray(0, firstRoom);
    block = block.subarray(first.length);
    const flags = (p.flags & END_STREAM) | (p.priority ? PRIORITY : 0) | (block.length === 0 ? END_HEADERS : 0);
    frames.push(frame(HEADERS, flags, p.streamId, p.priority ? Buffer.concat([p.priority, first]) : first));
    while (block.length > 0) {
      const part = block.subarray(0, MAX_FRAME);
      block = block.subarray(part.length);
      frames.push(frame(CONTINUATION, block.length === 0 ? END_HEADERS : 0, p.streamId, part));
    }
    return Buffer.concat(frames);
  }
}

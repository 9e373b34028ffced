import type { SpdyConnection, SpdyStream } from 'spdy-transport';

/** spdy-transport internals crishim patches or reads (it has no public API for them). */
export interface SideInternals {
  isEmpty(): boolean;
}
export interface ParserInternals {
  onSynHeadFrame(type: number, flags: number, body: unknown, cb: (err: Error | null, frame?: unknown) => void): void;
  parseKVs(buf: unknown, cb: (err: Error | null, headers?: Record<string, unknown>) => void): void;
}
interface ConnInternals {
  _spdyState: { parser: ParserInternals; window: { send: SideInternals }; framer: { readableLength: number } };
}
interface StreamInternals {
  _spdyState: { window: { send: SideInternals } };
}
export interface StreamReadInternals {
  push(chunk: Buffer | null): boolean;
  _read(n: number): void;
}

export const connInternals = (conn: SpdyConnection): ConnInternals['_spdyState'] =>
  (conn as unknown as ConnInternals)._spdyState;
export const streamInternals = (stream: SpdyStream): StreamInternals['_spdyState'] =>
  (stream as unknown as StreamInternals)._spdyState;

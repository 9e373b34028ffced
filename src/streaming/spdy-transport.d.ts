/** The parts of spdy-transport@3 (no published types) that crishim uses. */
declare module 'spdy-transport' {
  import type { Duplex } from 'stream';
  import type { EventEmitter } from 'events';

  export type SpdyHeaders = Record<string, string | string[] | undefined>;

  export interface SpdyStream extends Duplex {
    readonly id: number;
    readonly headers: SpdyHeaders;
    respond(status: number, headers: SpdyHeaders, callback?: (err?: Error) => void): void;
    abort(code?: string, callback?: () => void): void;
  }

  export interface SpdyRequest {
    method?: string;
    path: string;
    headers?: SpdyHeaders;
  }

  export interface SpdyConnection extends EventEmitter {
    start(version: number): void;
    request(uri: SpdyRequest, callback?: (err: Error | null, stream: SpdyStream) => void): SpdyStream;
    end(callback?: () => void): void;
    destroyStreams(err?: Error): void;
    on(event: 'stream', listener: (stream: SpdyStream) => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
    on(event: 'close', listener: () => void): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }

  export interface ConnectionOptions {
    protocol: 'spdy' | 'http2';
    isServer: boolean;
    windowSize?: number;
    maxStreams?: number;
    autoSpdy31?: boolean;
  }

  export const connection: { create(socket: Duplex, options: ConnectionOptions): SpdyConnection };
  export const protocol: { spdy: { parser: { create(options: unknown): object } } };
}

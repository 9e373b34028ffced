import type { Duplex } from 'stream';

/** Answers an upgrade request that will not be served and closes the connection. */
export function httpError(socket: Duplex, code: number, text: string, body: string): void {
  socket.end(`HTTP/1.1 ${code} ${text}\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

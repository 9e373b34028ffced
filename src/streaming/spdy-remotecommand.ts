import type { SpdyStream } from 'spdy-transport';
import {
  createResizeDecoder,
  errorStreamPayload,
  resizeRelay,
  supportsResize,
  type SessionOutcome,
} from './remotecommand';
import type { StreamSet } from './session';
import { acceptStream, closeConnection, header, type SpdyUpgrade } from './spdy';
import { endAndWait, writeGate } from './spdy-backpressure';

export interface RemoteCommandWants {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * Waits for the streams a remotecommand client opens (error, and stdin/stdout/
 * stderr/resize as requested) and exposes them as a StreamSet. Rejects when the
 * client does not open them in time or goes away first.
 */
export function spdyRemoteCommand(up: SpdyUpgrade, wants: RemoteCommandWants, timeoutMs = 30_000): Promise<StreamSet> {
  const { conn, protocol, socket } = up;
  const expected = new Set<string>(['error']);
  if (wants.stdin) expected.add('stdin');
  if (wants.stdout) expected.add('stdout');
  if (wants.stderr && !wants.tty) expected.add('stderr');
  if (wants.tty && supportsResize(protocol)) expected.add('resize');
  const got = new Map<string, SpdyStream>();
  const gone = new AbortController();
  socket.once('close', () => gone.abort());
  const resize = resizeRelay();

  return new Promise<StreamSet>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`timed out waiting for client streams (have ${[...got.keys()].join(',')})`)),
      timeoutMs,
    );
    const onClose = (): void => fail(new Error('client closed the connection before opening its streams'));
    socket.once('close', onClose);
    function fail(err: Error): void {
      clearTimeout(timer);
      socket.off('close', onClose);
      socket.destroy();
      reject(err);
    }
    conn.on('stream', (stream) => {
      acceptStream(stream);
      const type = header(stream.headers, 'streamType') ?? '';
      if (got.has(type) || !['error', 'stdin', 'stdout', 'stderr', 'resize'].includes(type)) {
        stream.resume();
        stream.end();
        return;
      }
      got.set(type, stream);
      if (type === 'resize') {
        const decode = createResizeDecoder(resize.push);
        stream.on('data', decode);
      } else if (type !== 'stdin') {
        stream.resume(); // nothing comes from the client here; reading lets the stream close
      }
      // stdin and resize are left open both ways: ending our (unused) half ends spdy-transport's read side too,
      // and later input or window changes would be lost; the connection's close ends them
      if (![...expected].every((t) => got.has(t))) return;
      clearTimeout(timer);
      socket.off('close', onClose);
      const stdoutStream = got.get('stdout');
      const stderrStream = got.get('stderr');
      const stdout = stdoutStream ? writeGate(stdoutStream, up) : null;
      const stderr = stderrStream && !wants.tty ? writeGate(stderrStream, up) : null;
      let finished = false;
      resolve({
        protocol,
        stdin: got.get('stdin') ?? null,
        stdout,
        stderr,
        gone: gone.signal,
        onResize: resize.onResize,
        async finish(outcome: SessionOutcome) {
          if (finished) return;
          finished = true;
          // output first: client-go reads the error stream only after stdout/stderr end
          await Promise.all([stdout ? endAndWait(stdout) : undefined, stderr ? endAndWait(stderr) : undefined]);
          // 'finish' only means the gate took the data: wait until it reached the SPDY streams
          await Promise.all([stdout?.flushed, stderr?.flushed]);
          for (const t of ['stdout', 'stderr'] as const) {
            const s = got.get(t);
            if (s && !s.writableEnded) s.end();
          }
          const errStream = got.get('error');
          if (errStream) {
            const payload = errorStreamPayload(protocol, outcome);
            if (payload) errStream.write(payload);
            // the exit status must be on the wire before GOAWAY, or the client reads an empty stream
            await endAndWait(errStream);
          }
          closeConnection(up);
        },
      });
    });
  });
}

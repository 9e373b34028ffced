/**
 * A CRI server that does no work: it answers each call with bytes recorded from crishim
 * (bench/replay-floor.ts), picked by the request's bytes, else the method's default. Run as
 * its own process, under the same client and load as crishim, it shows what the transport,
 * grpc-js and the client cost by themselves: the floor under the latency and CPU of any
 * runtime written on grpc-js (a Go server, containerd's, has a lower one).
 *   node replay-server.js SOCKET ANSWERS_JSON
 */
import { readFileSync } from 'fs';
import * as grpc from '@grpc/grpc-js';

/** method path -> request bytes (hex) -> answer (base64); the `default` key answers any other request. */
export type Answers = Record<string, Record<string, string>>;

function serve(socket: string, answers: Answers): void {
  const server = new grpc.Server();
  const identity = (b: Buffer): Buffer => b;
  for (const [method, byRequest] of Object.entries(answers)) {
    const bytes = new Map(Object.entries(byRequest).map(([req, b64]) => [req, Buffer.from(b64, 'base64')]));
    const fallback = bytes.get('default') ?? Buffer.alloc(0);
    server.register<Buffer, Buffer>(
      method,
      (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
        cb(null, bytes.get(call.request.toString('hex')) ?? fallback),
      identity,
      identity,
      'unary',
    );
  }
  server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) throw err;
    process.stdout.write('ready\n');
  });
  process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
}

if (require.main === module) {
  const [socket, file] = process.argv.slice(2);
  serve(socket, JSON.parse(readFileSync(file, 'utf8')) as Answers);
}

/**
 * The kubelet's polling calls as its own client makes them: the PLEG relist (ListPodSandbox, then
 * ListContainers) and the stats round (ListContainerStats, ListPodSandboxStats and ImageFsInfo at
 * once), for the latencies the kubelet load reports; and the same relist as raw Docker calls for the
 * baselines.
 *
 * The kubelet's client is grpc-go: compiled, and it decodes an answer of 110 pods in a fraction
 * of a millisecond. grpc-js's client, which the bench uses for every other call, spends about a
 * millisecond of its own on a call that comes after a second of idleness, and decodes with
 * protobufjs (another one or two for a relist at 110 pods, 25-40 ms for a stats round, whose
 * every counter it turns into a decimal string): its figures are mostly the client's. This
 * client speaks gRPC's framing over node:http2 and only walks the answer's top-level fields to
 * count the entries. It reads within 0.1-0.4 ms of a grpc-go client on the same servers
 * (docs/benchmarks.md, "The kubelet load").
 */
import type Docker from 'dockerode';
import * as http2 from 'http2';
import * as net from 'net';
import * as protobuf from 'protobufjs';

export interface RelistAnswer {
  sandboxes: number;
  containers: number;
}

/** The calls of the kubelet's stats round, each answering a list in its field 1. */
export const STATS_ROUND = ['ListContainerStats', 'ListPodSandboxStats', 'ImageFsInfo'] as const;
export type StatsRoundCall = (typeof STATS_ROUND)[number];

export interface KubeletClient {
  relist(): Promise<RelistAnswer>;
  /** `calls` at once (a runtime that cannot answer one is asked the others); each answer's entries. */
  statsRound(calls?: readonly StatsRoundCall[]): Promise<number[]>;
  close(): void;
}

/**
 * grpc-go grows its flow-control windows to what the connection carries (its BDP estimator); a
 * 64 KiB window, Node's default, would add a round trip per window once answers outgrow it.
 */
const WINDOW = 4 << 20;
/** What the kubelet's runtime calls carry (its --runtime-request-timeout, 2 minutes). */
const TIMEOUT = '120S';
/** An empty request message behind its 5-byte gRPC frame header (not compressed, length 0). */
const EMPTY_REQUEST = Buffer.alloc(5);

const decodeMessage = (m: string): string => {
  try {
    return decodeURIComponent(m);
  } catch {
    return m;
  }
};

/** How many times field 1 (the list) occurs in one gRPC-framed answer; throws on anything malformed. */
export function countListEntries(framed: Buffer): number {
  if (framed.length < 5 || framed[0] !== 0) throw new Error('answer is not one uncompressed gRPC message');
  const end = 5 + framed.readUInt32BE(1);
  if (end !== framed.length) throw new Error(`answer frame says ${end - 5} bytes, carries ${framed.length - 5}`);
  // protobufjs's reader walks the fields; only field 1's entries are counted, none is decoded
  const reader = protobuf.Reader.create(framed.subarray(5));
  let count = 0;
  try {
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      if (tag >>> 3 === 1 && (tag & 7) === 2) count++;
      reader.skipType(tag & 7);
    }
  } catch (err) {
    // the reader throws a RangeError when a length or varint goes past the end
    if (err instanceof RangeError) throw new Error('answer field runs past its message', { cause: err });
    throw new Error(`malformed answer: ${(err as Error).message}`, { cause: err });
  }
  return count;
}

/**
 * The relist through any client's calls: the kubelet's GetPods asks for the sandboxes, then for
 * the containers, one answer before the next question (pkg/kubelet/kuberuntime), so the relist
 * it waits for is two round trips, not one.
 */
export async function relistInTurn<T>(
  call: (method: 'ListPodSandbox' | 'ListContainers') => Promise<T>,
): Promise<[T, T]> {
  const sandboxes = await call('ListPodSandbox');
  return [sandboxes, await call('ListContainers')];
}

/**
 * The same relist as raw Docker calls, the baseline of a runtime without a view of its own: one
 * `docker ps` per CRI call, in the same turn, as cri-dockerd makes them.
 */
export function dockerRelist(docker: Pick<Docker, 'listContainers'>): Promise<unknown> {
  return relistInTurn((method) =>
    docker.listContainers({
      all: true,
      filters: { label: [`io.kubernetes.docker.type=${method === 'ListPodSandbox' ? 'podsandbox' : 'container'}`] },
    }),
  );
}

/**
 * What the client sends as `:authority`: `localhost`, as grpc-go sets it for Unix sockets since
 * kubernetes PR 123463 (1.30 on), or the socket path, as 1.26-1.29 kubelets send it, which
 * crishim serves through its rewriting shim (src/server/authority-fix.ts).
 */
export type KubeletAuthority = 'localhost' | 'socket-path';

/** `unix:///path` (or a bare path) -> a client that reconnects when its connection is gone. */
export function connectKubeletClient(endpoint: string, authority: KubeletAuthority = 'localhost'): KubeletClient {
  const socketPath = endpoint.replace(/^unix:\/\//, '');
  let session: http2.ClientHttp2Session | undefined;
  const connect = (): http2.ClientHttp2Session => {
    if (session && !session.closed && !session.destroyed) return session;
    const s = http2.connect('http://localhost', {
      createConnection: () => net.connect(socketPath),
      settings: { initialWindowSize: WINDOW },
    });
    s.on('connect', () => s.setLocalWindowSize(WINDOW));
    // a failed connection fails its calls; the next call connects again
    s.on('error', () => undefined);
    return (session = s);
  };

  const call = (method: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const service = method === 'ImageFsInfo' ? 'ImageService' : 'RuntimeService';
      const stream = connect().request({
        ':method': 'POST',
        ':path': `/runtime.v1.${service}/${method}`,
        ...(authority === 'socket-path' ? { ':authority': socketPath } : {}),
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': TIMEOUT,
      });
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let message = '';
      const statusFrom = (h: http2.IncomingHttpHeaders): void => {
        if (h['grpc-status'] === undefined) return;
        status = String(h['grpc-status']);
        // percent-encoded on the wire
        message = decodeMessage(String(h['grpc-message'] ?? ''));
      };
      stream.on('response', statusFrom);
      stream.on('trailers', statusFrom);
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', reject);
      // reset without an error (or cut): no answer is coming; a no-op once settled
      stream.on('close', () =>
        reject(new Error(`${method}: stream closed without an answer (code ${stream.rstCode})`)),
      );
      stream.on('end', () => {
        if (status !== '0') return reject(new Error(`${method}: grpc-status ${status ?? 'missing'} ${message}`));
        try {
          resolve(countListEntries(Buffer.concat(chunks)));
        } catch (err) {
          reject(new Error(`${method}: ${(err as Error).message}`));
        }
      });
      stream.end(EMPTY_REQUEST);
    });

  return {
    relist: async () => {
      const [sandboxes, containers] = await relistInTurn(call);
      return { sandboxes, containers };
    },
    statsRound: (calls = STATS_ROUND) => Promise.all(calls.map(call)),
    close: () => session?.close(),
  };
}

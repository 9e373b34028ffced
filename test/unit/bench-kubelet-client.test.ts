import { mkdtempSync } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import { connectKubeletClient, countListEntries } from '../../bench/kubelet-client';
import { loadCriProto } from '../support/cri-proto';
import { serveConnection } from '../../src/server/accept-connection';
import { AuthorityRelay } from '../../src/server/authority-relay';

const service = loadCriProto().runtime.v1.RuntimeService.service as unknown as grpc.ServiceDefinition;
const imageService = loadCriProto().runtime.v1.ImageService.service as unknown as grpc.ServiceDefinition;

const frame = (message: Buffer): Buffer => {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
};

describe("the bench's kubelet-shaped client", () => {
  it('counts the list entries of an answer as the generic encoder writes it', () => {
    const items = Array.from({ length: 3 }, (_, i) => ({
      id: `${i}`.padStart(64, 's'),
      metadata: { name: `web-${i}`, namespace: 'default', uid: 'u', attempt: i },
      state: 'SANDBOX_READY',
      created_at: '1700000000123456789',
      labels: { app: 'web', note: 'x'.repeat(200) },
    }));
    expect(countListEntries(frame(service.ListPodSandbox.responseSerialize({ items })))).toBe(3);
    expect(countListEntries(frame(Buffer.alloc(0)))).toBe(0);
  });

  it('refuses a frame whose length or fields do not add up', () => {
    const answer = frame(service.ListContainers.responseSerialize({ containers: [{ id: 'c'.repeat(64) }] }));
    expect(() => countListEntries(answer.subarray(0, answer.length - 1))).toThrow(/frame says/);
    const cut = Buffer.from(answer);
    cut.writeUInt32BE(3, 1);
    expect(() => countListEntries(cut.subarray(0, 8))).toThrow(/runs past/);
    const compressed = Buffer.from(answer);
    compressed[0] = 1;
    expect(() => countListEntries(compressed)).toThrow(/uncompressed/);
  });

  it('relists a grpc-js server over its socket, one call after the other, and reports its error status', async () => {
    const socket = path.join(mkdtempSync(path.join(os.tmpdir(), 'kubelet-client-')), 'cri.sock');
    const server = new grpc.Server();
    let failing = false;
    // what the server saw, in order: the kubelet asks for the containers only once it has the sandboxes
    const seen: string[] = [];
    server.addService(
      { ListPodSandbox: service.ListPodSandbox, ListContainers: service.ListContainers },
      {
        ListPodSandbox: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
          seen.push('ListPodSandbox');
          setTimeout(() => {
            seen.push('sandboxes answered');
            cb(null, { items: [{ id: 'a' }, { id: 'b' }] });
          }, 20);
        },
        ListContainers: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
          seen.push('ListContainers');
          if (failing) cb({ code: grpc.status.UNAVAILABLE, details: 'docker is away' });
          else cb(null, { containers: [{ id: 'c' }] });
        },
      },
    );
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())),
    );
    const client = connectKubeletClient(`unix://${socket}`);
    try {
      expect(await client.relist()).toEqual({ sandboxes: 2, containers: 1 });
      expect(seen).toEqual(['ListPodSandbox', 'sandboxes answered', 'ListContainers']);
      failing = true;
      await expect(client.relist()).rejects.toThrow(/ListContainers: grpc-status 14 docker is away/);
    } finally {
      client.close();
      server.forceShutdown();
    }
  });

  it('makes the stats round at once, each call on its service, and asks only the calls it is given', async () => {
    const socket = path.join(mkdtempSync(path.join(os.tmpdir(), 'kubelet-client-')), 'cri.sock');
    const server = new grpc.Server();
    const started: string[] = [];
    let answered = 0;
    // each answer waits until all three calls have come: a round made one call after another would stall
    const answer = (method: string, body: unknown) => (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
      started.push(method);
      const reply = (): void =>
        started.length >= 3 || answered > 0 ? (answered++, cb(null, body)) : void setTimeout(reply, 5);
      reply();
    };
    server.addService(
      { ListContainerStats: service.ListContainerStats, ListPodSandboxStats: service.ListPodSandboxStats },
      {
        ListContainerStats: answer('ListContainerStats', { stats: [{}, {}, {}] }),
        ListPodSandboxStats: answer('ListPodSandboxStats', { stats: [{}, {}] }),
      },
    );
    server.addService(
      { ImageFsInfo: imageService.ImageFsInfo },
      { ImageFsInfo: answer('ImageFsInfo', { image_filesystems: [{}] }) },
    );
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())),
    );
    const client = connectKubeletClient(`unix://${socket}`);
    try {
      expect(await client.statsRound()).toEqual([3, 2, 1]);
      expect([...started].sort()).toEqual(['ImageFsInfo', 'ListContainerStats', 'ListPodSandboxStats']);
      started.length = 0;
      expect(await client.statsRound(['ListContainerStats', 'ImageFsInfo'])).toEqual([3, 1]);
      expect(started.sort()).toEqual(['ImageFsInfo', 'ListContainerStats']);
    } finally {
      client.close();
      server.forceShutdown();
    }
  });

  it("sends the socket path as :authority when asked, as 1.26-1.29 kubelets do, which only crishim's shim serves", async () => {
    const server = new grpc.Server();
    server.addService(
      { ListPodSandbox: service.ListPodSandbox, ListContainers: service.ListContainers },
      {
        ListPodSandbox: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { items: [{ id: 'a' }] }),
        ListContainers: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { containers: [] }),
      },
    );
    const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kubelet-client-'));
    // the same server, reached bare and through the shim crishim puts before every connection
    const bare = net.createServer((conn) => injector.injectConnection(conn));
    const relay = new AuthorityRelay((c) => injector.injectConnection(c));
    await relay.start();
    const shimmed = net.createServer((conn) => serveConnection(conn, relay.routes()));
    const listen = (l: net.Server, name: string): Promise<string> =>
      new Promise((resolve) => l.listen(path.join(dir, name), () => resolve(`unix://${path.join(dir, name)}`)));
    const clients = [
      connectKubeletClient(await listen(bare, 'bare.sock'), 'socket-path'),
      connectKubeletClient(await listen(shimmed, 'shimmed.sock'), 'socket-path'),
    ];
    try {
      // HTTP/2 refuses a path as authority: the client does send it
      await expect(clients[0].relist()).rejects.toThrow(/NGHTTP2_PROTOCOL_ERROR/);
      expect(await clients[1].relist()).toEqual({ sandboxes: 1, containers: 0 });
    } finally {
      for (const c of clients) c.close();
      bare.close();
      shimmed.close();
      relay.close();
      injector.destroy();
      server.forceShutdown();
    }
  });
});

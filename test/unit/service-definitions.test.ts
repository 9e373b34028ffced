import type * as grpc from '@grpc/grpc-js';
import { criServiceDefinition, type CriServiceName } from '../../src/server/service-definitions';
import { loadCriProto } from '../support/cri-proto';

/** proto-loader's definitions, the reference the daemon's own must match. */
function reference(name: CriServiceName): grpc.ServiceDefinition {
  return loadCriProto().runtime.v1[name].service as unknown as grpc.ServiceDefinition;
}

const RICH: Record<string, { req?: unknown; res?: unknown }> = {
  RunPodSandbox: {
    req: {
      config: {
        metadata: { name: 'web', namespace: 'default', uid: 'u-1', attempt: 2 },
        labels: { app: 'web' },
        port_mappings: [{ protocol: 'UDP', container_port: 53, host_port: 5353 }],
        linux: { security_context: { namespace_options: { network: 'NODE' } } },
      },
      runtime_handler: 'runc',
    },
    res: { pod_sandbox_id: 'a'.repeat(64) },
  },
  ListContainers: {
    res: {
      containers: [
        {
          id: 'c'.repeat(64),
          state: 'CONTAINER_EXITED',
          created_at: '1700000000123456789',
          metadata: { name: 'app', attempt: 1 },
          annotations: { note: 'x'.repeat(300) },
        },
      ],
    },
  },
  ContainerStatus: {
    req: { container_id: 'c1', verbose: true },
    res: {
      status: {
        id: 'c1',
        exit_code: -1,
        finished_at: '-1',
        mounts: [{ container_path: '/a', propagation: 'PROPAGATION_PRIVATE' }],
      },
      info: { info: '{"pid":1}' },
    },
  },
  ListContainerStats: {
    res: { stats: [{ cpu: { timestamp: '1', usage_core_nano_seconds: { value: '18446744073709551615' } } }] },
  },
};

describe.each<CriServiceName>(['RuntimeService', 'ImageService'])('%s definition without proto-loader', (name) => {
  const ours = criServiceDefinition(name);
  const theirs = reference(name);

  it('has every method, with the same path and streaming shape', () => {
    expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort());
    for (const [method, def] of Object.entries(theirs)) {
      expect({ method, ...pick(ours[method]) }).toEqual({ method, ...pick(def) });
    }
  });

  it('encodes and decodes every message exactly as proto-loader does', () => {
    for (const [method, def] of Object.entries(theirs)) {
      const mine = ours[method];
      const samples = RICH[method] ?? {};
      for (const [value, ser, de, refSer, refDe] of [
        [
          samples.req ?? {},
          mine.requestSerialize,
          mine.requestDeserialize,
          def.requestSerialize,
          def.requestDeserialize,
        ],
        [
          samples.res ?? {},
          mine.responseSerialize,
          mine.responseDeserialize,
          def.responseSerialize,
          def.responseDeserialize,
        ],
      ] as const) {
        const bytes = refSer(value);
        expect(ser(value)).toEqual(bytes);
        // defaults filled in, enums as names, int64 as strings: the same plain object
        expect(de(bytes)).toEqual(refDe(bytes));
        expect(de(Buffer.alloc(0))).toEqual(refDe(Buffer.alloc(0)));
      }
    }
    // and something did get compared beyond empty messages
    const status = ours.ContainerStatus?.responseDeserialize(
      theirs.ContainerStatus.responseSerialize(RICH.ContainerStatus.res),
    );
    if (name === 'RuntimeService') expect(status).toMatchObject({ status: { exit_code: -1, finished_at: '-1' } });
  });

  it('refuses an array where a message belongs, as proto-loader does', () => {
    const first = Object.keys(theirs)[0];
    expect(() => ours[first].requestSerialize([])).toThrow(/got array instead/);
  });
});

function pick(d: grpc.MethodDefinition<unknown, unknown>): Record<string, unknown> {
  return {
    path: d.path,
    requestStream: d.requestStream,
    responseStream: d.responseStream,
    originalName: d.originalName,
  };
}

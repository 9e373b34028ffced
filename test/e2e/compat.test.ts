/**
 * Switching a node from cri-dockerd to crishim without draining: pods cri-dockerd
 * created (its labels, names, checkpoint files and CNI setup) are listed, and
 * can be stopped and removed, their IPs released.
 */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { call, docker, reservedIps, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(120_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 212 });
});
afterAll(() => teardown(h));

/** Runs the conflist's plugins for ADD the way any CNI runtime would, returning the pod IP. */
async function cniAdd(id: string, pid: number, name: string, ns: string, uid: string): Promise<string> {
  const list = JSON.parse(await fsp.readFile(path.join(h.cniConfDir, '10-crishim.conflist'), 'utf8'));
  let prev: unknown;
  for (const plugin of list.plugins) {
    const conf = { ...plugin, name: list.name, cniVersion: list.cniVersion, ...(prev ? { prevResult: prev } : {}) };
    const out = execFileSync(`/usr/lib/cni/${plugin.type}`, [], {
      input: JSON.stringify(conf),
      env: {
        PATH: process.env.PATH,
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: id,
        CNI_NETNS: `/proc/${pid}/ns/net`,
        CNI_IFNAME: 'eth0',
        CNI_PATH: '/usr/lib/cni',
        CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns};K8S_POD_NAME=${name};K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=${uid}`,
      },
      encoding: 'utf8',
    });
    prev = JSON.parse(out);
  }
  return (prev as { ips: Array<{ address: string }> }).ips[0].address.split('/')[0];
}

it('adopts a cri-dockerd pod: lists it, stops it (releasing its IP) and removes it', async () => {
  const name = 'legacy';
  const ns = 'crishim-e2e';
  const uid = `legacy-${Date.now()}`;
  // what cri-dockerd leaves on a node: its names and labels, nothing of crishim's
  const pause = await docker.createContainer({
    name: `k8s_POD_${name}_${ns}_${uid}_0`,
    Image: 'registry.k8s.io/pause:3.10',
    Labels: {
      'io.kubernetes.docker.type': 'podsandbox',
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': ns,
      'io.kubernetes.pod.uid': uid,
      app: 'legacy',
      'annotation.kubernetes.io/config.source': 'api',
    },
    HostConfig: { NetworkMode: 'none', IpcMode: 'shareable' },
  });
  await pause.start();
  const pid = (await pause.inspect()).State.Pid;
  const ip = await cniAdd(pause.id, pid, name, ns, uid);
  const app = await docker.createContainer({
    name: `k8s_app_${name}_${ns}_${uid}_0`,
    Image: 'crishim-test/busybox:latest',
    Cmd: ['sleep', '3600'],
    Labels: {
      'io.kubernetes.docker.type': 'container',
      'io.kubernetes.sandbox.id': pause.id,
      'io.kubernetes.container.name': 'app',
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': ns,
      'io.kubernetes.pod.uid': uid,
    },
    HostConfig: { NetworkMode: `container:${pause.id}` },
  });
  await app.start();
  // cri-dockerd's checkpoint: bare id file name, integer checksum
  await fsp.writeFile(
    path.join(h.rootDir, 'sandbox', pause.id),
    JSON.stringify({
      version: 'v1',
      name,
      namespace: ns,
      data: { port_mappings: null, host_network: false },
      checksum: 1234567,
    }),
  );

  const listed = (await call(h.runtime, 'ListPodSandbox', { filter: { id: pause.id } })).items ?? [];
  expect(listed.map((s) => [s.state, s.metadata?.name, s.metadata?.namespace, s.metadata?.uid])).toEqual([
    ['SANDBOX_READY', name, ns, uid],
  ]);
  expect(listed[0].labels).toMatchObject({ app: 'legacy' });
  expect(listed[0].annotations).toEqual({ 'kubernetes.io/config.source': 'api' });
  const containers =
    (await call(h.runtime, 'ListContainers', { filter: { pod_sandbox_id: pause.id } })).containers ?? [];
  expect(containers.map((c) => [c.id, c.metadata?.name, c.state])).toEqual([[app.id, 'app', 'CONTAINER_RUNNING']]);
  expect((await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pause.id })).status?.state).toBe('SANDBOX_READY');
  expect(await reservedIps(h.cni.ipamDir)).toContain(ip);

  await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pause.id });
  expect(await reservedIps(h.cni.ipamDir)).not.toContain(ip);
  await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pause.id });
  await expect(docker.getContainer(pause.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
  await expect(docker.getContainer(app.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
  expect(await fsp.readdir(path.join(h.rootDir, 'sandbox'))).toEqual([]);
});

/** The objects the cluster tests create, as plain JSON kubectl applies. */

export const AGNHOST = 'registry.k8s.io/e2e-test-images/agnhost:2.43';
export const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-4';

type Obj = Record<string, unknown>;

/** Nothing can be pulled here: every image comes from test/kubernetes/images.sh. */
const container = (name: string, image: string, extra: Obj = {}): Obj => ({
  name,
  image,
  imagePullPolicy: 'Never',
  ...extra,
});

export function namespace(name: string): Obj {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'crishim-test': 'true' } } };
}

export function configAndSecret(ns: string): Obj[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'app-config', namespace: ns },
      data: { greeting: 'hello' },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'app-secret', namespace: ns },
      stringData: { token: 's3cret' },
    },
  ];
}

/**
 * agnhost's netexec behind an init container, HTTP readiness and exec liveness probes, ConfigMap,
 * Secret and emptyDir volumes, and a busybox sidecar reading what the init container wrote.
 */
export function webDeployment(ns: string, replicas: number): Obj {
  const mounts = [{ name: 'work', mountPath: '/work' }];
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          terminationGracePeriodSeconds: 2,
          initContainers: [
            container('init', BUSYBOX, {
              command: ['sh', '-c', 'echo init-done > /work/init.txt'],
              volumeMounts: mounts,
            }),
          ],
          containers: [
            container('web', AGNHOST, {
              args: ['netexec', '--http-port=8080'],
              readinessProbe: { httpGet: { path: '/hostname', port: 8080 }, periodSeconds: 2 },
              livenessProbe: { exec: { command: ['cat', '/work/init.txt'] }, periodSeconds: 5 },
              volumeMounts: [
                ...mounts,
                { name: 'config', mountPath: '/config' },
                { name: 'secret', mountPath: '/secret' },
              ],
            }),
            container('sidecar', BUSYBOX, {
              command: ['sh', '-c', 'while true; do cat /work/init.txt; sleep 5; done'],
              volumeMounts: mounts,
            }),
          ],
          volumes: [
            { name: 'work', emptyDir: {} },
            { name: 'config', configMap: { name: 'app-config' } },
            { name: 'secret', secret: { secretName: 'app-secret' } },
          ],
        },
      },
    },
  };
}

export function idJob(ns: string, uid: number, gid: number): Obj {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'whoami', namespace: ns },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          securityContext: { runAsUser: uid, runAsGroup: gid },
          containers: [container('id', BUSYBOX, { command: ['sh', '-c', 'id -u; id -g'] })],
        },
      },
    },
  };
}

export function pod(ns: string, name: string, command: string[], extra: Obj = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: { terminationGracePeriodSeconds: 1, containers: [container('main', BUSYBOX, { command })], ...extra },
  };
}

/** `extra` goes into the sleeping container (a readiness probe, say). */
export function sleepers(ns: string, name: string, replicas: number, extra: Obj = {}): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [container('sleep', BUSYBOX, { command: ['sleep', '3600'], ...extra })],
        },
      },
    },
  };
}

export const list = (items: Obj[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

import * as http from 'http';
import { status as grpcStatus } from '@grpc/grpc-js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from '../logging/logger';
import type { NetworkPlugin } from '../network/types';

/** crishim's Prometheus metrics; one registry per daemon so tests can run several. */
export interface Metrics {
  readonly registry: Registry;
  observeRpc(method: string, code: grpcStatus, seconds: number): void;
  observeDocker(method: string, path: string, seconds: number, ok: boolean): void;
  observeCni(op: 'ADD' | 'DEL', seconds: number, ok: boolean): void;
  /** Sets the collector for the sandbox/container state gauges (runs once per scrape, shared by both). */
  setStateCollector(fn: () => Promise<StateCounts>): void;
  /** Sets what the oldest-Docker-call gauge reads at each scrape (milliseconds waited, 0 for none). */
  setDockerWait(fn: () => number): void;
}

/** Counts by CRI state, e.g. `{ SANDBOX_READY: 2 }`. */
export interface StateCounts {
  sandboxes: Record<string, number>;
  containers: Record<string, number>;
}

/** `/containers/3f2a.../json` -> `/containers/{id}/json`, so label values stay bounded. */
export function dockerRoute(path: string): string {
  const p = path.replace(/^\/v[0-9.]+/, '').split('?')[0];
  // image names contain slashes: everything before the verb is the name
  const image = /^\/images\/(.+?)(\/(json|history|push|tag|get))?$/.exec(p);
  if (image && !['json', 'create', 'prune', 'load', 'search'].includes(image[1]))
    return `/images/{id}${image[2] ?? ''}`;
  return p.replace(/\/(containers|exec|networks|volumes)\/(?!(?:json|create|prune)$)[^/]+/, '/$1/{id}');
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'crishim_process_' });
  const rpcTotal = new Counter({
    name: 'crishim_rpc_requests_total',
    help: 'CRI RPCs served, by method and gRPC code.',
    labelNames: ['method', 'code'],
    registers: [registry],
  });
  const rpcErrors = new Counter({
    name: 'crishim_rpc_errors_total',
    help: 'CRI RPCs that failed, by method and gRPC code.',
    labelNames: ['method', 'code'],
    registers: [registry],
  });
  const rpcSeconds = new Histogram({
    name: 'crishim_rpc_duration_seconds',
    help: 'CRI RPC latency.',
    labelNames: ['method'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  const dockerSeconds = new Histogram({
    name: 'crishim_docker_request_duration_seconds',
    help: 'Docker Engine API request latency, by method and route.',
    labelNames: ['method', 'route', 'ok'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  const cniSeconds = new Histogram({
    name: 'crishim_cni_operation_duration_seconds',
    help: 'CNI ADD/DEL latency for a whole plugin chain.',
    labelNames: ['op', 'ok'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  let collect: (() => Promise<StateCounts>) | undefined;
  // prom-client starts every collect of a scrape in the same tick: they share this read
  let reading: Promise<StateCounts | undefined> | undefined;
  const readState = (): Promise<StateCounts | undefined> => {
    if (!collect) return Promise.resolve(undefined);
    reading ??= collect()
      .catch(() => undefined)
      .finally(() => (reading = undefined));
    return reading;
  };
  const stateGauge = (name: string, help: string, pick: (s: StateCounts) => Record<string, number>): Gauge =>
    new Gauge({
      name,
      help,
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const s = await readState();
        // Docker unreachable: keep the last values rather than report zero pods
        if (!s) return;
        this.reset();
        for (const [state, n] of Object.entries(pick(s))) this.set({ state }, n);
      },
    });
  let dockerWaitMs = (): number => 0;
  new Gauge({
    name: 'crishim_docker_oldest_call_seconds',
    help: 'How long the oldest Docker call that a working dockerd answers at once has been waiting (0: none).',
    registers: [registry],
    collect() {
      this.set(dockerWaitMs() / 1000);
    },
  });
  stateGauge('crishim_pod_sandboxes', 'Pod sandboxes by CRI state.', (s) => s.sandboxes);
  stateGauge('crishim_containers', 'Containers by CRI state.', (s) => s.containers);
  return {
    registry,
    observeRpc(method, code, seconds) {
      const name = grpcStatus[code] ?? String(code);
      rpcTotal.inc({ method, code: name });
      if (code !== grpcStatus.OK) rpcErrors.inc({ method, code: name });
      rpcSeconds.observe({ method }, seconds);
    },
    observeDocker(method, path, seconds, ok) {
      dockerSeconds.observe({ method, route: dockerRoute(path), ok: String(ok) }, seconds);
    },
    observeCni(op, seconds, ok) {
      cniSeconds.observe({ op, ok: String(ok) }, seconds);
    },
    setStateCollector(fn) {
      collect = fn;
    },
    setDockerWait(fn) {
      dockerWaitMs = fn;
    },
  };
}

/** Times every CNI ADD/DEL of a plugin without the network code knowing about metrics. */
export function instrumentNetwork(plugin: NetworkPlugin, metrics: Metrics): NetworkPlugin {
  const timed =
    <A extends unknown[], R>(op: 'ADD' | 'DEL', fn: (...a: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const t0 = process.hrtime.bigint();
      let ok = false;
      try {
        const r = await fn(...args);
        ok = true;
        return r;
      } finally {
        metrics.observeCni(op, Number(process.hrtime.bigint() - t0) / 1e9, ok);
      }
    };
  return {
    get name() {
      return plugin.name;
    },
    status: () => plugin.status(),
    setUpPod: timed('ADD', (req) => plugin.setUpPod(req)),
    tearDownPod: timed('DEL', (req) => plugin.tearDownPod(req)),
    podNetwork: (id) => plugin.podNetwork(id),
    cachedSandboxes: () => plugin.cachedSandboxes(),
    setPodCidr: (cidr) => plugin.setPodCidr(cidr),
    close: () => plugin.close(),
  };
}

/** Serves GET /metrics on host:port; returns the bound port. */
export async function startMetricsServer(
  bind: string,
  metrics: Metrics,
  logger: Logger,
): Promise<{ port: number; close(): Promise<void> }> {
  const m = /^(.*):(\d+)$/.exec(bind);
  if (!m) throw new Error(`--metrics-bind-address ${JSON.stringify(bind)}: expected host:port`);
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404).end('not found\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(m[2]), m[1].replace(/^\[|\]$/g, '') || '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  logger.info('metrics listening', { address: `${m[1]}:${port}` });
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

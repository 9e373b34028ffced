/** What the sandbox code needs from pod networking; `src/network/` implements it with CNI. */

export interface PortMappingSpec {
  hostPort: number;
  containerPort: number;
  protocol: 'tcp' | 'udp' | 'sctp';
  hostIP?: string;
}

export interface PodNetworkRequest {
  podName: string;
  podNamespace: string;
  podUid: string;
  /** The pause container's id (CNI_CONTAINERID and K8S_POD_INFRA_CONTAINER_ID). */
  sandboxId: string;
  /** Path of the sandbox's network namespace, e.g. `/proc/<pid>/ns/net`. Empty on teardown when the container is gone. */
  netnsPath: string;
  portMappings: PortMappingSpec[];
  /** Abort when the RPC is cancelled or times out; plugins get killed. */
  signal?: AbortSignal;
  /**
   * Teardown of a sandbox another runtime set up (cri-dockerd): with no cached
   * ADD, run DEL with the current config instead of doing nothing.
   */
  adopted?: boolean;
}

export interface PodNetworkResult {
  /** Primary pod IP first, then the rest (e.g. IPv6). */
  ips: string[];
  /** The network (CNI config) name that set the pod up. */
  networkName: string;
}

export interface NetworkStatus {
  ready: boolean;
  /** `NetworkPluginNotReady` when not ready. */
  reason: string;
  message: string;
  /** Name and file of the CNI config in use, when one is. */
  configName?: string;
  configFile?: string;
}

export interface NetworkPlugin {
  readonly name: string;
  status(): NetworkStatus;
  /** CNI ADD; on failure it has already undone itself (DEL) before rejecting. */
  setUpPod(req: PodNetworkRequest): Promise<PodNetworkResult>;
  /** CNI DEL from the cached ADD result; idempotent, works without the netns or the container. */
  tearDownPod(req: PodNetworkRequest): Promise<void>;
  /** IPs of a set-up pod from the cache (after a restart too), or undefined. */
  podNetwork(sandboxId: string): Promise<PodNetworkResult | undefined>;
  /** Sandbox ids with cached network state (set up, or interrupted mid-ADD). */
  cachedSandboxes(): Promise<string[]>;
  /** The pod CIDR from UpdateRuntimeConfig, passed to plugins as runtimeConfig. */
  setPodCidr(cidr: string): void;
  close(): void;
}

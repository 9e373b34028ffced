import * as path from 'path';
import { Command, Option } from 'commander';
import { cgroupPath, logFiles, logLevel, logSize, offOrWhole, oneOf, positiveInt } from './config-values';
import type { LogFormat } from './logging/logger';

/** Everything the daemon is configured with; flags map 1:1 onto it (names follow cri-dockerd). */
export interface Config {
  containerRuntimeEndpoint: string;
  dockerEndpoint: string;
  dockerTlsCa?: string;
  dockerTlsCert?: string;
  dockerTlsKey?: string;
  networkPlugin: 'cni' | 'none';
  cniConfDir: string;
  cniBinDirs: string[];
  cniCacheDir: string;
  /** A CNI plugin still running after this long is killed and the operation fails. */
  cniExecTimeoutSeconds: number;
  podInfraContainerImage: string;
  podCidr: string;
  rootDirectory: string;
  runtimeCgroups: string;
  streamingBindAddr: string;
  metricsBindAddress: string;
  logLevel: string;
  logFormat: LogFormat;
  /** A pull that reports no progress for this long is cancelled. */
  imagePullProgressDeadlineSeconds: number;
  /** A Docker call that a working dockerd answers at once, unanswered this long, makes RuntimeReady false (0: never). */
  dockerStallTimeoutSeconds: number;
  /** Docker json-file `max-size` of containers we create (e.g. `10m`): its rotation size. */
  containerLogMaxSize: string;
  /** Docker json-file `max-file` (at least 2): rotated files kept before Docker deletes the oldest. */
  containerLogMaxFiles: number;
  /** Growth of V8's old space (MiB) past the last trim that makes the daemon compact it and give pages back (0: never; src/heap-trim.ts). */
  heapTrimStepMiB: number;
  /** `--version`: print versions (ours, CRI, Docker API in use) and exit. */
  printVersion?: boolean;
}

export const VERSION = '0.1.0';
export const CRI_VERSION = 'v1';

export const DEFAULTS: Config = {
  containerRuntimeEndpoint: 'unix:///run/crishim/crishim.sock',
  dockerEndpoint: '',
  networkPlugin: 'cni',
  cniConfDir: '/etc/cni/net.d',
  cniBinDirs: ['/opt/cni/bin', '/usr/lib/cni'],
  cniCacheDir: '',
  cniExecTimeoutSeconds: 60,
  podInfraContainerImage: 'registry.k8s.io/pause:3.10',
  podCidr: '',
  rootDirectory: '/var/lib/crishim',
  runtimeCgroups: '',
  streamingBindAddr: '127.0.0.1:0',
  metricsBindAddress: '',
  logLevel: 'info',
  logFormat: 'text',
  imagePullProgressDeadlineSeconds: 60,
  // the kubelet's own PLEG health threshold, which a hung dockerd used to trip under dockershim
  dockerStallTimeoutSeconds: 180,
  // kubelet's own container log defaults; at Docker's write rate (~30 MB/s here) a file stays
  // on disk for over a second after its rotation, long enough for the copy to open it
  containerLogMaxSize: '10m',
  containerLogMaxFiles: 5,
  // about a minute of the kubelet's polling at 110 pods; half of V8's own 8 MB step (src/heap-trim.ts)
  heapTrimStepMiB: 4,
};

/** Builds the CLI; `parseConfig` runs it. Exported so --help output can be tested. */
export function buildCli(): Command {
  const d = DEFAULTS;
  return new Command('crishim')
    .description('Kubernetes CRI v1 runtime service on top of the Docker Engine')
    .helpOption('-h, --help', 'show the flags and their defaults')
    .allowExcessArguments(false)
    .addOption(new Option('--version', 'print crishim, CRI and Docker API versions and exit'))
    .addOption(
      new Option(
        '--container-runtime-endpoint <endpoint>',
        'CRI socket to serve on (unix:///path, or fd:// under systemd socket activation)',
      ).default(d.containerRuntimeEndpoint),
    )
    .addOption(
      new Option('--docker-endpoint <endpoint>', 'Docker Engine endpoint (unix:///path or tcp://host:port)').default(
        d.dockerEndpoint,
        'DOCKER_HOST, else unix:///var/run/docker.sock',
      ),
    )
    .addOption(new Option('--docker-tls-ca <file>', 'CA certificate for a TLS Docker endpoint'))
    .addOption(new Option('--docker-tls-cert <file>', 'client certificate for a TLS Docker endpoint'))
    .addOption(new Option('--docker-tls-key <file>', 'client key for a TLS Docker endpoint'))
    .addOption(
      new Option('--network-plugin <name>', 'pod network plugin').choices(['cni', 'none']).default(d.networkPlugin),
    )
    .addOption(new Option('--cni-conf-dir <dir>', 'directory probed for CNI configs').default(d.cniConfDir))
    .addOption(
      new Option('--cni-bin-dir <dirs>', 'comma-separated directories holding CNI plugin binaries').default(
        d.cniBinDirs.join(','),
      ),
    )
    .addOption(
      new Option('--cni-cache-dir <dir>', 'where CNI results are cached').default(
        d.cniCacheDir,
        '<root-directory>/cni-cache',
      ),
    )
    .addOption(
      new Option('--cni-exec-timeout <seconds>', 'kill a CNI plugin that runs longer than this')
        .argParser(positiveInt)
        .default(d.cniExecTimeoutSeconds),
    )
    .addOption(
      new Option('--pod-infra-container-image <image>', 'sandbox (pause) image').default(d.podInfraContainerImage),
    )
    .addOption(new Option('--pod-cidr <cidr>', 'pod CIDR handed to CNI plugins').default(d.podCidr, 'none'))
    .addOption(
      new Option('--root-directory <dir>', 'state directory (checkpoints, CNI cache)').default(d.rootDirectory),
    )
    .addOption(
      new Option('--cri-dockerd-root-directory <dir>', 'alias of --root-directory, for cri-dockerd unit files'),
    )
    .addOption(
      new Option('--runtime-cgroups <cgroup>', 'cgroup to move the daemon into at start (created when missing)')
        .argParser(cgroupPath)
        .default(d.runtimeCgroups, 'none'),
    )
    .addOption(
      new Option('--streaming-bind-addr <addr>', 'host:port of the exec/attach/port-forward server').default(
        d.streamingBindAddr,
      ),
    )
    .addOption(
      new Option('--metrics-bind-address <addr>', 'host:port for Prometheus /metrics').default(
        d.metricsBindAddress,
        'off',
      ),
    )
    .addOption(
      new Option('--log-level <level>', 'error, warn, info or debug (also warning, trace, fatal, panic)')
        .argParser(logLevel)
        .default(d.logLevel),
    )
    .addOption(
      new Option('--log-format <format>', 'text or json')
        .argParser(oneOf('--log-format', ['text', 'json'] as const))
        .default(d.logFormat),
    )
    .addOption(
      new Option('--image-pull-progress-deadline <seconds>', 'cancel a pull that makes no progress for this long')
        .argParser(positiveInt)
        .default(d.imagePullProgressDeadlineSeconds),
    )
    .addOption(
      new Option(
        '--docker-stall-timeout <seconds>',
        'report RuntimeReady=false while a Docker call that should be prompt has hung this long (0: off)',
      )
        .argParser(offOrWhole('seconds'))
        .default(d.dockerStallTimeoutSeconds),
    )
    .addOption(
      new Option('--container-log-max-size <size>', 'Docker json-file max-size of new containers (its rotation size)')
        .argParser(logSize)
        .default(d.containerLogMaxSize),
    )
    .addOption(
      new Option('--container-log-max-files <n>', 'Docker json-file max-file of new containers (at least 2)')
        .argParser(logFiles)
        .default(d.containerLogMaxFiles),
    )
    .addOption(
      new Option(
        '--heap-trim-step <MiB>',
        'compact the JS heap and give its free pages back once it has grown this much (0: leave it to V8)',
      )
        .argParser(offOrWhole('MiB'))
        .default(d.heapTrimStepMiB),
    );
}

interface CliOptions {
  containerRuntimeEndpoint: string;
  dockerEndpoint: string;
  dockerTlsCa?: string;
  dockerTlsCert?: string;
  dockerTlsKey?: string;
  networkPlugin: 'cni' | 'none';
  cniConfDir: string;
  cniBinDir: string;
  cniCacheDir: string;
  cniExecTimeout: number;
  podInfraContainerImage: string;
  podCidr: string;
  rootDirectory: string;
  criDockerdRootDirectory?: string;
  runtimeCgroups: string;
  streamingBindAddr: string;
  metricsBindAddress: string;
  logLevel: string;
  logFormat: LogFormat;
  imagePullProgressDeadline: number;
  dockerStallTimeout: number;
  containerLogMaxSize: string;
  containerLogMaxFiles: number;
  heapTrimStep: number;
  version?: boolean;
}

/** Parses argv (without node and script) into a Config; throws a commander error on bad flags. */
export function parseConfig(argv: string[], cli: Command = buildCli()): Config {
  cli.exitOverride();
  cli.parse(argv, { from: 'user' });
  const o = cli.opts<CliOptions>();
  const rootDirectory = path.resolve(o.criDockerdRootDirectory ?? o.rootDirectory);
  return {
    containerRuntimeEndpoint: o.containerRuntimeEndpoint,
    dockerEndpoint: o.dockerEndpoint,
    dockerTlsCa: o.dockerTlsCa,
    dockerTlsCert: o.dockerTlsCert,
    dockerTlsKey: o.dockerTlsKey,
    networkPlugin: o.networkPlugin,
    cniConfDir: o.cniConfDir,
    cniBinDirs: o.cniBinDir
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    cniCacheDir: o.cniCacheDir || path.join(rootDirectory, 'cni-cache'),
    cniExecTimeoutSeconds: o.cniExecTimeout,
    podInfraContainerImage: o.podInfraContainerImage,
    podCidr: o.podCidr,
    rootDirectory,
    runtimeCgroups: o.runtimeCgroups,
    streamingBindAddr: o.streamingBindAddr,
    metricsBindAddress: o.metricsBindAddress,
    logLevel: o.logLevel,
    logFormat: o.logFormat,
    imagePullProgressDeadlineSeconds: o.imagePullProgressDeadline,
    dockerStallTimeoutSeconds: o.dockerStallTimeout,
    containerLogMaxSize: o.containerLogMaxSize,
    containerLogMaxFiles: o.containerLogMaxFiles,
    heapTrimStepMiB: o.heapTrimStep,
    printVersion: o.version === true,
  };
}

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
// before dockerode: keeps its ssh and BuildKit code (never used here) from loading
import './unused-transports';
import Docker from 'dockerode';
import type { Logger } from '../logging/logger';

export type DockerApi = Docker;

export interface DockerEndpointOptions {
  /** `unix:///var/run/docker.sock`, `tcp://host:port`, or empty to use DOCKER_HOST. */
  endpoint?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * Abandon any request not answered within this long (`crishim doctor`: a hung dockerd
   * accepts connections and answers nothing, and a diagnosis must not wait on it forever).
   * Unset for the daemon, whose event, log and attach streams live as long as they like.
   */
  requestTimeoutMs?: number;
}

/** Translates a docker-style endpoint (flag, else DOCKER_HOST, else the default socket) into dockerode options. */
export function dockerOptions(opts: DockerEndpointOptions): Docker.DockerOptions {
  const env = opts.env ?? process.env;
  const endpoint = opts.endpoint || env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  if (endpoint.startsWith('unix://')) return { socketPath: endpoint.slice('unix://'.length) };
  if (endpoint.startsWith('/')) return { socketPath: endpoint };
  const m = /^(tcp|http|https):\/\/([^:/]+|\[[^\]]+\])(?::(\d+))?\/?$/.exec(endpoint);
  if (!m)
    throw new Error(
      `unsupported docker endpoint ${JSON.stringify(endpoint)}: expected unix:///path or tcp://host:port`,
    );
  const verify = env.DOCKER_TLS_VERIFY !== undefined && env.DOCKER_TLS_VERIFY !== '' && env.DOCKER_TLS_VERIFY !== '0';
  // like the Docker CLI: without DOCKER_CERT_PATH the certificates live in its config directory
  const certDir = env.DOCKER_CERT_PATH || env.DOCKER_CONFIG || path.join(env.HOME || os.homedir(), '.docker');
  const ca = opts.tlsCa ?? (verify ? path.join(certDir, 'ca.pem') : undefined);
  const cert = opts.tlsCert ?? (verify ? path.join(certDir, 'cert.pem') : undefined);
  const key = opts.tlsKey ?? (verify ? path.join(certDir, 'key.pem') : undefined);
  const tls = m[1] === 'https' || Boolean(ca || cert || key);
  const out: Docker.DockerOptions = {
    host: m[2].replace(/^\[|\]$/g, ''),
    port: m[3] ? Number(m[3]) : tls ? 2376 : 2375,
    protocol: tls ? 'https' : 'http',
  };
  if (ca) out.ca = readTlsFile(ca, 'CA certificate');
  if (cert) out.cert = readTlsFile(cert, 'client certificate');
  if (key) out.key = readTlsFile(key, 'client key');
  return out;
}

function readTlsFile(file: string, what: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new Error(`cannot read the Docker TLS ${what} ${file}: ${(err as Error).message}`, { cause: err });
  }
}

export interface DockerClient {
  readonly api: DockerApi;
  /** API version negotiated with the engine (e.g. `1.41`), or undefined when the engine was down at startup. */
  readonly apiVersion: string | undefined;
}

/**
 * Connects and pins the API version the engine reports, so requests use the
 * engine's own version instead of a hard-coded one that a newer engine may drop.
 */
export async function connectDocker(opts: DockerEndpointOptions, logger: Logger): Promise<DockerClient> {
  const base = dockerOptions(opts);
  const probe = withDeadline(new Docker(base), opts.requestTimeoutMs);
  try {
    const v = await probe.version();
    const apiVersion = v.ApiVersion;
    logger.info('connected to docker', { dockerVersion: v.Version, apiVersion });
    const api = withDeadline(new Docker({ ...base, version: `v${apiVersion}` }), opts.requestTimeoutMs);
    return { api: createOptionsInBodyOnly(api), apiVersion };
  } catch (err) {
    logger.warn('docker is not reachable at startup; requests will fail with UNAVAILABLE until it is', {
      error: (err as Error).message,
    });
    return { api: createOptionsInBodyOnly(probe), apiVersion: undefined };
  }
}

/** The part of docker-modem's request function the create-body rewrite and the deadline hook. */
type DialCallback = (err: unknown, result?: unknown) => void;
interface ModemDialOptions {
  path?: string;
  options?: Record<string, unknown>;
  abortSignal?: AbortSignal;
}

/**
 * Gives every request without a signal of its own one that aborts after `ms` (docker-modem
 * hands it to the HTTP request), so it fails as a timeout (see fromDockerError) instead of
 * waiting on a dockerd that will never answer.
 */
export function withDeadline(api: DockerApi, ms: number | undefined): DockerApi {
  if (!ms) return api;
  const modem = api.modem as unknown as { dial(options: ModemDialOptions, callback: DialCallback): unknown };
  const dial = modem.dial.bind(modem);
  modem.dial = (options: ModemDialOptions, callback: DialCallback): unknown =>
    dial({ ...options, abortSignal: options.abortSignal ?? AbortSignal.timeout(ms) }, callback);
  return api;
}

/**
 * dockerode hands the whole container create body to docker-modem as `options`, which
 * docker-modem then sends both as the JSON body and, since the path ends in `?`, as the
 * query string: every env value (Secrets included), label and annotation lands in the
 * request URI that dockerd logs in debug mode and any proxy in front of a tcp:// endpoint
 * logs, and a config over ~1 MB fails with HTTP 431. docker-modem's own `_query`/`_body`
 * split sends the name (and platform) in the query and the rest in the body only.
 */
export function createOptionsInBodyOnly(api: DockerApi): DockerApi {
  const modem = api.modem as unknown as { dial(options: ModemDialOptions, callback: DialCallback): unknown };
  const dial = modem.dial.bind(modem);
  modem.dial = (options: ModemDialOptions, callback: DialCallback): unknown => {
    const opts = options.options;
    if (options.path === '/containers/create?' && opts && !('_body' in opts)) {
      const { name, platform, abortSignal: _signal, ...body } = opts;
      const query: Record<string, unknown> = {};
      if (name !== undefined) query.name = name;
      if (platform !== undefined) query.platform = platform;
      return dial({ ...options, options: { _query: query, _body: body } }, callback);
    }
    return dial(options, callback);
  };
  return api;
}

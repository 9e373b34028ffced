#!/usr/bin/env -S node --v8-pool-size=1
// --v8-pool-size=1 on the line above (and in the unit's NODE_OPTIONS): one V8 worker thread, so one
// malloc arena instead of four (docs/how-it-works.md, "Memory and the V8 settings"); node reads it only at its start.
// before anything allocates or compiles: the V8 flags the daemon sets on itself (see the module)
import './v8-start-flags';
import { CommanderError } from 'commander';
import { buildCli, CRI_VERSION, parseConfig, VERSION, type Config } from './config';
import { connectDocker } from './docker/client';
import { startDaemon } from './daemon';
import { runDoctorCli } from './doctor/cli';
import { logHostChecks } from './doctor/startup-log';
import { createLogger, setRootLogger } from './logging/logger';
import { createNotifier } from './readiness/notify';
import { startReadiness } from './readiness/readiness';
import { enterRuntimeCgroup } from './cgroups/runtime-cgroup';
import { installMemoryReport } from './memory-report';
import { startHeapTrim } from './heap-trim';

/** systemd's default PATH: with none at all (env -i) iptables, nsenter and CNI's own tools would not be found. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const DOCTOR_HELP =
  '\nCheck this host the way the daemon with these flags sees it:\n  crishim doctor [flags] [--output json]\n';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  process.env.PATH ||= DEFAULT_PATH;
  let config;
  try {
    if (argv[0] === 'doctor') return process.exit(await runDoctorCli(argv.slice(1)));
    config = parseConfig(argv, buildCli().addHelpText('after', DOCTOR_HELP));
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; bad flags with commander's message and 1
      process.exit(err.exitCode);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel, config.logFormat);
  setRootLogger(logger);
  if (config.printVersion) return printVersion(config);

  // a bug in one request must never take the node's runtime down
  process.on('unhandledRejection', (reason) => logger.error('unhandled rejection', { error: String(reason) }));
  process.on('uncaughtException', (err) => logger.error('uncaught exception', { error: err.stack ?? String(err) }));

  // before anything is spawned, so CNI plugins and relays start in the runtime cgroup too
  if (config.runtimeCgroups) await enterRuntimeCgroup(config.runtimeCgroups, logger);
  const daemon = await startDaemon(config, logger);
  const readiness = startReadiness({
    notifier: createNotifier({ onError: (err) => logger.warn('cannot notify systemd', { error: err.message }) }),
    engine: daemon.deps.engine,
    network: daemon.deps.network,
    dockerEndpoint: config.dockerEndpoint,
    socketPath: daemon.socketPath,
    logger,
  });
  void logHostChecks(config, daemon.deps.engine.current(), daemon.deps.docker, logger).catch((err: unknown) =>
    logger.warn('host checks failed', { error: String(err) }),
  );
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    Promise.all([readiness.stopping(), daemon.close()]).then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('shutdown failed', { error: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  // the memory bench's probe; a no-op unless CRISHIM_MEMORY_REPORT is set
  installMemoryReport(process.env);
  // a check costs microseconds; at the kubelet's pace the old space grows a step in about a minute
  startHeapTrim(config.heapTrimStepMiB, 10_000, logger);
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Versions an operator needs in a bug report, including the Docker API version negotiated now. */
async function printVersion(config: Config): Promise<void> {
  const quiet = createLogger('error', 'text');
  const client = await connectDocker(
    {
      endpoint: config.dockerEndpoint,
      tlsCa: config.dockerTlsCa,
      tlsCert: config.dockerTlsCert,
      tlsKey: config.dockerTlsKey,
    },
    quiet,
  );
  process.stdout.write(
    `crishim ${VERSION}\nCRI API ${CRI_VERSION}\nDocker API ${client.apiVersion ?? 'unknown (docker unreachable)'}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`crishim: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

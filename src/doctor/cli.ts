import { Option } from 'commander';
import { buildCli, parseConfig } from '../config';
import { connectEngine } from '../docker/connect';
import { createEngineInfo } from '../docker/engine-info';
import { createLogger } from '../logging/logger';
import { hostProbes } from './probes';
import { exitCode, formatJson, formatText, runChecks } from './run';

/** How long doctor waits on any one Docker request: a working dockerd answers in milliseconds, `docker info` on a big host in seconds. */
const DOCKER_DEADLINE_MS = 10_000;

/**
 * `crishim doctor [daemon flags] [--output text|json]`: the daemon's own flags,
 * so the checks see the host exactly as that daemon would. Returns the exit code.
 */
export async function runDoctorCli(argv: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const cli = buildCli()
    .name('crishim doctor')
    .description('check this host the way the daemon with these flags would see it')
    .addOption(new Option('--output <format>', 'text or json').choices(['text', 'json']).default('text'));
  const config = parseConfig(argv, cli);
  const output = cli.opts<{ output: 'text' | 'json' }>().output;
  const quiet = createLogger('error', 'text');
  const { engine: docker } = await connectEngine(
    {
      endpoint: config.dockerEndpoint,
      tlsCa: config.dockerTlsCa,
      tlsCert: config.dockerTlsCert,
      tlsKey: config.dockerTlsKey,
      requestTimeoutMs: DOCKER_DEADLINE_MS,
    },
    quiet,
  );
  const engineInfo = createEngineInfo(docker, quiet, { intervalMs: 60_000 });
  try {
    const engine = await engineInfo.refresh({ force: true });
    const results = await runChecks({ config, engine, probes: hostProbes(docker, quiet) });
    out.write(output === 'json' ? formatJson(results) : formatText(results));
    return exitCode(results);
  } finally {
    engineInfo.close();
  }
}

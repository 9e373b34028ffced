import winston from 'winston';

export type LogFormat = 'json' | 'text';
export type Logger = winston.Logger;

/** One process-wide root logger; modules take children carrying pod/container ids. */
let root: Logger = createLogger('info', 'text');

export function createLogger(level: string, format: LogFormat): Logger {
  const fmt =
    format === 'json'
      ? winston.format.combine(winston.format.timestamp(), winston.format.json())
      : winston.format.combine(
          winston.format.timestamp(),
          winston.format.printf(({ timestamp, level: lvl, message, ...meta }) => {
            const rest = Object.entries(meta)
              .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v)}`)
              .join(' ');
            return `${String(timestamp)} ${lvl} ${String(message)}${rest ? ' ' + rest : ''}`;
          }),
        );
  return skipDisabledLevels(
    winston.createLogger({
      level,
      format: fmt,
      // stderr, like other node agents, so stdout stays free for --version/--help output
      transports: [
        new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug', 'verbose', 'silly'] }),
      ],
    }),
  );
}

type LevelMethod = (this: Logger, ...args: unknown[]) => Logger;

/**
 * winston formats every line (timestamp, JSON) and only then lets the transport drop it
 * by level, so a debug line costs as much at `info` as at `debug`: measured ~0.4 ms of CPU
 * per CNI plugin run and per stats call. The level methods here return at once when their
 * level is off. Child loggers are created from the instance, so they inherit these.
 *
 * winston's own `isLevelEnabled` builds the transport list and a closure on every call (under
 * a kubelet's polling, more than crishim's call handler allocated of its own). Its answer
 * depends only on the logger's level here, the one transport having none of its own, so it is
 * kept per configured level and asked again when the level changes.
 */
function skipDisabledLevels(logger: Logger): Logger {
  const ask = logger.isLevelEnabled;
  const known = new Map<string, Map<string, boolean>>();
  logger.isLevelEnabled = function (this: Logger, level: string): boolean {
    let byLevel = known.get(this.level);
    if (!byLevel) known.set(this.level, (byLevel = new Map()));
    let enabled = byLevel.get(level);
    if (enabled === undefined) byLevel.set(level, (enabled = ask.call(this, level)));
    return enabled;
  };
  const methods = logger as unknown as Record<string, LevelMethod>;
  for (const level of Object.keys(logger.levels)) {
    const write = methods[level];
    if (typeof write !== 'function') continue;
    methods[level] = function (this: Logger, ...args: unknown[]): Logger {
      return this.isLevelEnabled(level) ? write.apply(this, args) : this;
    };
  }
  return logger;
}

export function setRootLogger(logger: Logger): void {
  root = logger;
}

export function log(): Logger {
  return root;
}

/** Shortens an id for log lines the way docker does (12 hex chars). */
export function shortId(id: string): string {
  return id.length > 12 ? id.slice(0, 12) : id;
}

import { Writable } from 'stream';
import winston from 'winston';

/** A winston logger at `level` whose records (message, level and fields) the test can read. */
export function recordingLogger(level = 'debug'): { logger: winston.Logger; records: Array<Record<string, unknown>> } {
  const records: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    objectMode: true,
    write(info: Record<string, unknown>, _enc, cb) {
      records.push(info);
      cb();
    },
  });
  return { logger: winston.createLogger({ level, transports: [new winston.transports.Stream({ stream })] }), records };
}

import type { LogStream } from '../logging/cri-log';

/**
 * Docker's json-file records -> CRI log entries.
 *
 * Each line of `<id>-json.log` is one record: {"log":"...","stream":"stdout","time":"..."}.
 * Docker's copier ends a record at a newline or after 16 KiB of a longer line, so a record
 * whose `log` does not end in a newline is a partial line (a `P` entry), continued by the
 * next record of the same stream. tty containers are stored the same way (stream "stdout").
 */

/** What a chunk of json-file lines turned into. */
export interface ConvertedChunk {
  /** CRI entries, one after another. */
  cri: Buffer;
  records: number;
  /** Lines that were not json-file records (reported by the caller, never written). */
  bad: number;
  /** Time of the last record, normalised; undefined when the chunk had none. */
  lastTime?: string;
}

/** Drops the records a predicate refuses (used once, when resuming without a saved position). */
export type RecordFilter = (time: string, stream: LogStream) => boolean;

interface JsonRecord {
  log?: unknown;
  stream?: unknown;
  time?: unknown;
}

const GO_TIME = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/;

/**
 * Go's RFC3339Nano drops trailing zeros ("...:10.7131Z", "...:10Z"); CRI files written by
 * every other path carry nine digits, and the kubelet compares times as text when it merges.
 */
export function normaliseTime(time: string): string | undefined {
  if (time.length === 30 && time[19] === '.' && time[29] === 'Z') return time;
  const m = GO_TIME.exec(time);
  if (!m) return undefined;
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}Z`;
}

/** CRI entries for one record: one per line, the last one `P` when the record ends without a newline. */
export function criEntriesText(time: string, stream: LogStream, log: string): string {
  const nl = log.indexOf('\n');
  // the common case: one line, or one piece of a long one
  if (nl < 0) return `${time} ${stream} P ${log}\n`;
  if (nl === log.length - 1) return `${time} ${stream} F ${log}`;
  let out = '';
  let start = 0;
  for (let i = nl; i >= 0; i = log.indexOf('\n', start)) {
    out += `${time} ${stream} F ${log.slice(start, i + 1)}`;
    start = i + 1;
  }
  if (start < log.length) out += `${time} ${stream} P ${log.slice(start)}\n`;
  return out;
}

const LOG_START = '{"log":"';
const STREAM_AT = '","stream":"';
const TIME_AT = '","time":"';

/**
 * The record as Docker 20.10 lays it out, `{"log":"…","stream":"stdout","time":"…"}`, split
 * without a JSON parser: the escaped log text cannot hold an unescaped quote, so the first
 * `","stream":"` ends it. Anything else (attrs, another order) is left to JSON.parse.
 */
function splitPlainRecord(line: string): { value: string; stream: LogStream; time: string } | undefined {
  if (!line.startsWith(LOG_START)) return undefined;
  const at = line.indexOf(STREAM_AT, LOG_START.length);
  if (at < 0) return undefined;
  const rest = at + STREAM_AT.length;
  const stream = line.startsWith('stdout', rest) ? 'stdout' : line.startsWith('stderr', rest) ? 'stderr' : undefined;
  if (!stream || !line.startsWith(TIME_AT, rest + 6) || !line.endsWith('"}')) return undefined;
  return { value: line.slice(LOG_START.length, at), stream, time: line.slice(rest + 6 + TIME_AT.length, -2) };
}

/** A JSON string's escaped content -> text; most lines carry no escape but their final \n. */
function unescapeLog(value: string): string {
  const bs = value.indexOf('\\');
  if (bs < 0) return value;
  if (bs === value.length - 2 && value.endsWith('\\n')) return value.slice(0, -2) + '\n';
  return JSON.parse(`"${value}"`) as string;
}

/**
 * Converts whole json-file lines (a chunk ending in a newline) into CRI entries. The text is
 * valid UTF-8 (Docker's encoder escapes invalid bytes), so decoding a chunk cut at a newline
 * never splits a character.
 */
export function convertJsonLines(data: Buffer, keep?: RecordFilter): ConvertedChunk {
  const text = data.toString('utf8');
  let out = '';
  let records = 0;
  let bad = 0;
  let lastTime: string | undefined;
  let start = 0;
  for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
    const line = text.slice(start, nl);
    start = nl + 1;
    if (line.length === 0) continue;
    const plain = splitPlainRecord(line);
    if (plain) {
      const time = normaliseTime(plain.time);
      let log: string | undefined;
      try {
        log = time === undefined ? undefined : unescapeLog(plain.value);
      } catch {
        log = undefined;
      }
      if (log === undefined || time === undefined) {
        bad += 1;
        continue;
      }
      records += 1;
      lastTime = time;
      if (log.length === 0 || (keep && !keep(time, plain.stream))) continue;
      out += criEntriesText(time, plain.stream, log);
      continue;
    }
    let rec: JsonRecord;
    try {
      rec = JSON.parse(line) as JsonRecord;
    } catch {
      bad += 1;
      continue;
    }
    const time = typeof rec.time === 'string' ? normaliseTime(rec.time) : undefined;
    if (typeof rec.log !== 'string' || time === undefined) {
      bad += 1;
      continue;
    }
    const stream: LogStream = rec.stream === 'stderr' ? 'stderr' : 'stdout';
    records += 1;
    lastTime = time;
    if (rec.log.length === 0 || (keep && !keep(time, stream))) continue;
    out += criEntriesText(time, stream, rec.log);
  }
  return { cri: Buffer.from(out, 'utf8'), records, bad, lastTime };
}

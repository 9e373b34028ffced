/**
 * The log copy begun before Docker starts the container (LogManager.beforeStart), against real
 * files laid out as Docker lays them out, and a fake Docker that says "not running" until told.
 */
import { existsSync, promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import winston from 'winston';
import { FakeEngine, inspectInfo } from '../support/fake-engine';
import { createLogManager, type LogManager } from '../../src/logs/log-manager';
import { createLogPositionStore, type LogPositionStore } from '../../src/logs/log-positions';

const silent = winston.createLogger({ silent: true });
const ID = 'beef'.repeat(16);
const T = '2026-11-25T19:40:00.000000001Z';
const JSON_FILE_LOG = { HostConfig: { LogConfig: { Type: 'json-file', Config: {} } } };

const record = (text: string): string => JSON.stringify({ log: `${text}\n`, stream: 'stdout', time: T }) + '\n';

async function until(what: string, ok: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('log copy begun before the start', () => {
  let dir: string;
  let root: string;
  let jsonFile: string;
  let logPath: string;
  let positions: LogPositionStore;
  let m: LogManager | undefined;
  /** What the fake Docker's inspect says of the container. */
  let state: { Running: boolean; Status: string };

  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-early-'));
    root = path.join(dir, 'docker');
    await fsp.mkdir(path.join(root, 'containers', ID), { recursive: true });
    jsonFile = path.join(root, 'containers', ID, `${ID}-json.log`);
    logPath = path.join(dir, 'pods', 'c', '0.log');
    positions = createLogPositionStore(path.join(dir, 'positions'));
    state = { Running: false, Status: 'created' };
  });
  afterEach(async () => {
    m?.closeAll();
    m = undefined;
    await fsp.rm(dir, { recursive: true, force: true });
  });

  const manager = (dockerRoot: string | undefined): LogManager => {
    const engine = new FakeEngine();
    engine.inspectContainer = async () =>
      inspectInfo({ Id: ID, LogPath: state.Running ? jsonFile : '', State: { ...state, Pid: 0 }, ...JSON_FILE_LOG });
    return createLogManager(engine, silent, { positions, dockerRootDir: () => dockerRoot });
  };
  const cri = async (): Promise<string[]> =>
    (await fsp.readFile(logPath, 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ')[3]);

  it('copies output written before Docker answered the start, across a rotation, once', async () => {
    m = manager(root);
    const settle = m.beforeStart(ID, logPath, false, JSON_FILE_LOG);
    // Docker said "created" all along: a copy that took that for an exit would stop at its first check
    await fsp.writeFile(jsonFile, record('one') + record('two'));
    await until('the first lines copied', async () => (await cri()).length === 2);
    await new Promise((r) => setTimeout(r, 100));
    // Docker's rotation: the live file renamed to .1, a new one created
    await fsp.rename(jsonFile, `${jsonFile}.1`);
    await fsp.writeFile(jsonFile, record('three'));
    await until('the rotated-in line copied', async () => (await cri()).length === 3);
    state = { Running: false, Status: 'exited' };
    await settle(true);
    await m.idle(ID);
    expect(await cri()).toEqual(['one', 'two', 'three']);
    expect(positions.load(ID)?.source.offset).toBe(record('three').length);
  });

  it('undoes everything when Docker refuses the start: no CRI file, directory or position left', async () => {
    m = manager(root);
    const settle = m.beforeStart(ID, logPath, false, JSON_FILE_LOG);
    expect(existsSync(logPath)).toBe(true);
    // Docker created the json-file before the runtime failed
    await fsp.writeFile(jsonFile, '');
    await settle(false);
    expect(existsSync(path.dirname(logPath))).toBe(false);
    expect(positions.load(ID)).toBeUndefined();
    expect(m.reopen(ID)).toBe(false);
  });

  it('keeps a CRI file that was there before a refused start', async () => {
    await fsp.mkdir(path.dirname(logPath), { recursive: true });
    await fsp.writeFile(logPath, '');
    m = manager(root);
    await m.beforeStart(ID, logPath, false, JSON_FILE_LOG)(false);
    expect(existsSync(logPath)).toBe(true);
  });

  it('without a known Docker data root, waits for the start and locates the file as before', async () => {
    m = manager(undefined);
    const settle = m.beforeStart(ID, logPath, false, JSON_FILE_LOG);
    expect(existsSync(logPath)).toBe(false);
    await fsp.writeFile(jsonFile, record('late'));
    state = { Running: true, Status: 'running' };
    await settle(true);
    await until('the line copied', async () => (await cri()).length === 1);
    state = { Running: false, Status: 'exited' };
    m.drained(ID, 2000);
    await m.idle(ID);
    expect(await cri()).toEqual(['late']);
  });
});

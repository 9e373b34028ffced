import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PodLogDirs } from '../../bench/pod-logs';

describe('bench PodLogDirs', () => {
  const meta = (n: number) => ({ namespace: 'ns', name: `p${n}`, uid: `u${n}` });
  let parent = '';
  let root = '';
  beforeEach(() => {
    parent = mkdtempSync(path.join(os.tmpdir(), 'bench-pod-logs-'));
    root = path.join(parent, 'logs');
  });
  afterEach(() => rmSync(parent, { recursive: true, force: true }));

  it("lays out the kubelet's pod and container directories", () => {
    const dir = new PodLogDirs(root).make(meta(1), 'app');
    expect(dir).toBe(path.join(root, 'ns_p1_u1'));
    expect(readdirSync(dir)).toEqual(['app']);
  });

  it('removes a pod directory by its sandbox id, and only that one', () => {
    const logs = new PodLogDirs(root);
    const one = logs.make(meta(1), 'app');
    const two = logs.make(meta(2), 'app');
    logs.own('sandbox-1', one);
    logs.own('sandbox-2', two);
    writeFileSync(path.join(one, 'app', '0.log'), 'line\n');
    logs.remove('sandbox-1');
    logs.remove('unknown');
    expect(existsSync(one)).toBe(false);
    expect(existsSync(two)).toBe(true);
    logs.removeAll();
    expect(existsSync(root)).toBe(false);
  });
});

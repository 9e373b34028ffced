import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { dockerBinds } from '../../src/cri/container-config';

type Mount = Parameters<typeof dockerBinds>[0][number];
const mount = (host_path: string): Mount =>
  ({
    container_path: '/data',
    host_path,
    readonly: false,
    selinux_relabel: false,
    propagation: 'PROPAGATION_PRIVATE',
  }) as Mount;

describe('mount sources that resolve into crishim state', () => {
  let base: string;
  let root: string;
  beforeAll(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'crishim-binds-'));
    root = path.join(base, 'root');
    fs.mkdirSync(path.join(root, 'sandbox'), { recursive: true });
    fs.mkdirSync(path.join(base, 'data'));
    fs.symlinkSync(root, path.join(base, 'to-root'));
    fs.symlinkSync(path.join(root, 'sandbox'), path.join(base, 'to-sandbox'));
    fs.symlinkSync(path.join(base, 'data'), path.join(base, 'to-data'));
  });
  afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

  it.each(['to-root', 'to-sandbox'])('refuses a symlink %s into the root directory', (link) => {
    const deps = { config: { rootDirectory: root } } as Parameters<typeof dockerBinds>[1];
    expect(() => dockerBinds([mount(path.join(base, link))], deps)).toThrow(/state directory/);
  });

  it('hands Docker the resolved path of an ordinary symlinked source', () => {
    const deps = { config: { rootDirectory: root } } as Parameters<typeof dockerBinds>[1];
    expect(dockerBinds([mount(path.join(base, 'to-data'))], deps)).toEqual([`${path.join(base, 'data')}:/data:rw`]);
  });
});

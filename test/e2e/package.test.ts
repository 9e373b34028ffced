/**
 * The package (issue 14): `npm run package` builds the single executable, the
 * .deb and the tarball; the executable from the extracted .deb, run with an
 * empty environment (no node on PATH, no node_modules next to it), serves
 * CRI, runs a pod with CNI, re-executes itself as the port-forward relay in
 * the pod's netns, and tells NOTIFY_SOCKET it is ready.
 */
import { ChildProcess, execFileSync, spawn, spawnSync } from 'child_process';
import { existsSync, promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import WebSocket from 'ws';
import { BUSYBOX, call, REPO, podConfig, startCrishim, teardown, type Crishim } from './harness';
import { unitEnvironment } from '../../bench/daemon-command';

const hasDpkgDeb = spawnSync('dpkg-deb', ['--version']).status === 0;
if (!hasDpkgDeb)
  process.stderr.write('package.test: dpkg-deb is missing (apt-get install dpkg-dev): skipping the .deb tests\n');
const describePkg = hasDpkgDeb ? describe : describe.skip;

const VERSION = (
  JSON.parse(execFileSync('cat', [path.join(REPO, 'package.json')], { encoding: 'utf8' })) as { version: string }
).version;

/** A unix datagram listener (Node has none): python3 prints each datagram as one JSON string line. */
function notifyListener(sockPath: string): { proc: ChildProcess; messages: string[]; ready: Promise<void> } {
  const script = [
    'import json, os, socket, sys',
    's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
    's.bind(sys.argv[1])',
    'print("listening", flush=True)',
    'while True:',
    '    print(json.dumps(s.recv(4096).decode()), flush=True)',
  ].join('\n');
  const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  const proc = spawn(python, ['-c', script, sockPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  const messages: string[] = [];
  let buf = '';
  const ready = new Promise<void>((resolve) => {
    proc.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) {
        if (l === 'listening') resolve();
        else if (l) messages.push(JSON.parse(l) as string);
      }
    });
  });
  return { proc, messages, ready };
}

/** The threads of a running process. */
async function threadCount(pid: number): Promise<number> {
  return (await fsp.readdir(`/proc/${pid}/task`)).length;
}

async function eventually<T>(get: () => T | undefined, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * One request through PortForward's WebSocket protocol (v4.channel.k8s.io):
 * after two frames naming the port, channel 0 carries the data; the answer is
 * what arrives until the pod side closes (or 5 s pass).
 */
function httpOverPortForward(url: string, port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}?port=${port}`, ['v4.channel.k8s.io']);
    const data: Buffer[] = [];
    let portFrames = 0;
    const finish = (): void => {
      clearTimeout(timer);
      ws.terminate();
      resolve(Buffer.concat(data).toString());
    };
    const timer = setTimeout(finish, 5000);
    ws.on('message', (d: Buffer) => {
      if (portFrames < 2 && d.length === 3) portFrames++;
      else if (d[0] === 0) data.push(d.subarray(1));
    });
    ws.once('open', () => ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(request)])));
    ws.once('close', finish);
    ws.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

describePkg('npm run package', () => {
  let work: string;
  let extracted: string;
  let exe: string;
  const deb = path.join(
    REPO,
    'dist-pkg',
    `crishim_${VERSION}_${execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim()}.deb`,
  );

  beforeAll(async () => {
    // the build is part of the test, so CI proves the package builds from the checkout
    execFileSync('npm', ['run', '-s', 'package'], { cwd: REPO, stdio: 'pipe', timeout: 300_000 });
    work = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-pkg-'));
    extracted = path.join(work, 'root');
    execFileSync('dpkg-deb', ['-x', deb, extracted]);
    exe = path.join(extracted, 'usr', 'bin', 'crishim');
  }, 320_000);

  afterAll(async () => {
    if (work) await fsp.rm(work, { recursive: true, force: true });
  });

  it('holds the executable, socket-activated notify units, docs and the example CNI config', async () => {
    expect(execFileSync('dpkg-deb', ['-f', deb, 'Package', 'Version'], { encoding: 'utf8' })).toBe(
      `Package: crishim\nVersion: ${VERSION}\n`,
    );
    const service = await fsp.readFile(path.join(extracted, 'lib/systemd/system/crishim.service'), 'utf8');
    for (const line of [
      'Type=notify',
      'ExecStart=/usr/bin/crishim --container-runtime-endpoint fd://',
      'Delegate=yes',
      'KillMode=process',
      'Restart=always',
      'OOMScoreAdjust=-999',
      'LimitNOFILE=infinity',
      'Requires=crishim.socket docker.service',
      'Environment=NODE_OPTIONS=--v8-pool-size=1',
    ]) {
      expect(service.split('\n')).toContain(line);
    }
    const socket = await fsp.readFile(path.join(extracted, 'lib/systemd/system/crishim.socket'), 'utf8');
    for (const line of [
      'ListenStream=/run/crishim/crishim.sock',
      'SocketMode=0660',
      'SocketUser=root',
      'SocketGroup=docker',
    ])
      expect(socket.split('\n')).toContain(line);
    const example = JSON.parse(
      await fsp.readFile(path.join(extracted, 'usr/share/doc/crishim/examples/10-crishim.conflist'), 'utf8'),
    ) as { plugins: Array<{ type: string }> };
    expect(example.plugins.map((p) => p.type)).toEqual(['bridge', 'portmap', 'firewall']);
    expect(await fsp.readFile(path.join(extracted, 'usr/share/doc/crishim/README.md'), 'utf8')).toContain(
      'crishim doctor',
    );
    // the tarball is the same tree
    const tarball = path.join(
      REPO,
      'dist-pkg',
      `crishim-${VERSION}-linux-${execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim()}.tar.gz`,
    );
    const inTar = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l && !l.endsWith('/'))
      .map((l) => l.replace(/^\.\//, ''))
      .sort();
    const inDeb = execFileSync('dpkg-deb', ['-c', deb], { encoding: 'utf8' })
      .split('\n')
      .map((l) => l.split(/\s+/).pop() ?? '')
      .filter((l) => l && !l.endsWith('/'))
      .map((l) => l.replace(/^\.\//, ''))
      .sort();
    expect(inTar).toEqual(inDeb);
    expect(inDeb).toContain('usr/bin/crishim');
  });

  it('runs with an empty environment: --version and doctor', () => {
    const version = execFileSync('env', ['-i', exe, '--version'], { encoding: 'utf8' });
    expect(version).toContain(`crishim ${VERSION}`);
    expect(version).toMatch(/Docker API \d+\.\d+/);
    const doctor = spawnSync('env', ['-i', exe, 'doctor', '--root-directory', path.join(work, 'doctor-root')], {
      encoding: 'utf8',
      timeout: 60_000,
      killSignal: 'SIGKILL',
    });
    expect(doctor.stdout).toMatch(/^ok +docker-endpoint/m);
    expect(doctor.status).toBe(0);
  });

  describe("the extracted daemon, env -i plus the unit's Environment=", () => {
    let h: Crishim | undefined;
    let listener: ReturnType<typeof notifyListener>;
    let notifySocket: string;

    beforeAll(async () => {
      notifySocket = path.join(work, 'notify.sock');
      listener = notifyListener(notifySocket);
      await listener.ready;
      const unit = await fsp.readFile(path.join(extracted, 'lib/systemd/system/crishim.service'), 'utf8');
      h = await startCrishim({
        subnetIndex: 244,
        executable: exe,
        exactEnv: { ...unitEnvironment(unit), NOTIFY_SOCKET: notifySocket },
      });
    }, 60_000);

    afterAll(async () => {
      await teardown(h);
      listener?.proc.kill();
    });

    it('serves CRI and sends READY=1 with a STATUS line', async () => {
      const v = await call(h!.runtime, 'Version', {});
      expect(v.runtime_name).toBe('docker');
      const ready = await eventually(() => listener.messages.find((m) => m.split('\n').includes('READY=1')), 'READY=1');
      expect(ready).toMatch(/^STATUS=serving CRI on /m);
      expect(ready).toContain(`MAINPID=${h!.proc.pid}`);
    });

    // the single executable honours NODE_OPTIONS: node's default pool is four V8 workers, the unit's one
    it("runs three fewer threads than with node's default V8 pool", async () => {
      const plain = await startCrishim({ subnetIndex: 245, noCniConfig: true, executable: exe, exactEnv: {} });
      try {
        expect((await threadCount(plain.proc.pid!)) - (await threadCount(h!.proc.pid!))).toBe(3);
      } finally {
        await teardown(plain);
      }
    });

    it('runs a pod with CNI and port-forwards into it with itself as the relay', async () => {
      const config = podConfig('pkg');
      const { pod_sandbox_id: podId } = await call(h!.runtime, 'RunPodSandbox', { config });
      try {
        const st = await call(h!.runtime, 'PodSandboxStatus', { pod_sandbox_id: podId });
        expect(st.status?.network?.ip).toMatch(/^10\.88\.244\./);
        const { container_id: ctr } = await call(h!.runtime, 'CreateContainer', {
          pod_sandbox_id: podId,
          config: {
            metadata: { name: 'web', attempt: 0 },
            image: { image: BUSYBOX },
            command: ['httpd', '-f', '-p', '8080', '-h', '/etc'],
            log_path: 'web/0.log',
          },
          sandbox_config: config,
        });
        await call(h!.runtime, 'StartContainer', { container_id: ctr });
        // PortForward: the daemon starts its relay in the pod's netns as `nsenter -- crishim port-forward-relay`
        const { url = '' } = await call(h!.runtime, 'PortForward', { pod_sandbox_id: podId, port: [8080] });
        let text = '';
        for (let i = 0; i < 50 && !/^HTTP\/1\.[01] 200/.test(text); i++) {
          text = await httpOverPortForward(url, 8080, 'GET /hostname HTTP/1.0\r\n\r\n');
          if (!text) await new Promise((r) => setTimeout(r, 200)); // httpd not listening yet
        }
        expect(text).toMatch(/^HTTP\/1\.[01] 200/);
        expect(text).toContain('pkg');
        expect(await fsp.readFile(h!.logFile, 'utf8')).toContain('port-forward relay started in pod network namespace');
      } finally {
        await call(h!.runtime, 'StopPodSandbox', { pod_sandbox_id: podId });
        await call(h!.runtime, 'RemovePodSandbox', { pod_sandbox_id: podId });
      }
    });

    it('sends STOPPING=1 on SIGTERM', async () => {
      await h!.stop();
      await eventually(() => listener.messages.find((m) => m.split('\n').includes('STOPPING=1')), 'STOPPING=1');
    });
  });
});

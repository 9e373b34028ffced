import { execFileSync } from 'child_process';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Runs src/docker/unused-transports.ts in a plain node process (jest keeps its own module
 * registry, where require.cache does nothing), then loads dockerode, and answers which of
 * the modules crishim never uses were loaded anyway.
 */
function loadedAfterDockerode(withStubs: boolean): { ssh2: boolean; uuid: boolean; sessionThrows: string } {
  const script = `
    const ts = require('typescript');
    const fs = require('fs');
    const Module = require('module');
    const file = ${JSON.stringify(path.join(ROOT, 'src', 'docker', 'unused-transports.ts'))};
    if (${withStubs}) {
      const js = ts.transpileModule(fs.readFileSync(file, 'utf8'), { compilerOptions: { module: ts.ModuleKind.CommonJS, esModuleInterop: true } }).outputText;
      const m = new Module(file); m.filename = file; m.paths = Module._nodeModulePaths(${JSON.stringify(ROOT)});
      m._compile(js, file);
    }
    require('dockerode');
    const keys = Object.keys(require.cache);
    let sessionThrows = '';
    try { require('dockerode/lib/session')(); } catch (e) { sessionThrows = e.message; }
    process.stdout.write(JSON.stringify({
      ssh2: keys.some((k) => k.includes('/node_modules/ssh2/')),
      uuid: keys.some((k) => k.includes('/node_modules/uuid/')),
      sessionThrows,
    }));
  `;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' }));
}

describe('unused Docker transports', () => {
  it('keeps ssh2 and the BuildKit session out of the process', () => {
    const r = loadedAfterDockerode(true);
    expect(r).toEqual({ ssh2: false, uuid: false, sessionThrows: expect.stringMatching(/^crishim: /) });
  });

  it('is what makes the difference: dockerode alone loads both', () => {
    const r = loadedAfterDockerode(false);
    expect(r.ssh2).toBe(true);
    expect(r.uuid).toBe(true);
  });
});

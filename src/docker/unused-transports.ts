import Module from 'module';

/**
 * At load time docker-modem requires ssh2 (for ssh:// endpoints) and dockerode its
 * BuildKit session (for `buildImage` with version 2). ssh2 alone is ~40 modules, their
 * sources kept as heap strings, and a 16 MiB WebAssembly memory for poly1305; the session
 * pulls in uuid. crishim uses neither: `dockerOptions` accepts unix:// and tcp:// only and
 * nothing builds images. So both modules are replaced by stubs that throw if ever called,
 * before dockerode loads (measured on an idle daemon: about 4 MiB RSS and 1 MiB heap less).
 *
 * Import this module before `dockerode`. The single executable does the same in its bundle
 * (packaging/bundle.mjs), where these paths cannot be resolved and this does nothing.
 */
const UNUSED: Record<string, string> = {
  'docker-modem/lib/ssh': 'ssh:// Docker endpoints are not supported',
  'dockerode/lib/session': 'image builds with BuildKit sessions are not supported',
};

function stubOut(request: string, why: string): void {
  let file: string;
  try {
    file = require.resolve(request);
  } catch {
    return; // bundled: packaging/bundle.mjs stubs it instead
  }
  if (require.cache[file]) return; // already loaded: too late to save anything
  const stub = new Module(file);
  stub.filename = file;
  stub.loaded = true;
  stub.exports = (): never => {
    throw new Error(`crishim: ${why}`);
  };
  require.cache[file] = stub;
}

for (const [request, why] of Object.entries(UNUSED)) stubOut(request, why);

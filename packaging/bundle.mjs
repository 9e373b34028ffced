// Bundles dist/entry.js (the relay, else main.js) into one CommonJS file for the single executable,
// whose main script can require() only Node's built-in modules.
import { build } from 'esbuild';

// Optional native addons, each required inside try/catch by its user (ws:
// bufferutil, utf-8-validate; ssh2, dockerode's ssh:// transport: cpu-features,
// sshcrypto.node). In the bundle they throw at once, as when not installed,
// instead of reaching the SEA require() (which warns on every start).
const OPTIONAL_NATIVE = /^(bufferutil|utf-8-validate|cpu-features)$|\.node$/;

// Transports crishim never uses, required at load by docker-modem (ssh2) and dockerode (BuildKit
// session): stubbed as src/docker/unused-transports.ts does under node, so ssh2 stays out.
const UNUSED_TRANSPORTS = [
  { filter: /^\.\/ssh$/, importer: /docker-modem[\\/]lib[\\/]modem\.js$/ },
  { filter: /^\.\/session$/, importer: /dockerode[\\/]lib[\\/]docker\.js$/ },
];

await build({
  entryPoints: ['dist/entry.js'],
  outfile: process.argv[2],
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  legalComments: 'none',
  // V8 keeps a script's source for as long as its functions may still be compiled, and the single
  // executable's one script is every bundled module, run or not: without comments and whitespace it
  // is 1.8 MB instead of 2.9, and the daemon ~5 MiB smaller under a kubelet's load. Identifiers stay,
  // so stack traces still name crishim's functions.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  plugins: [
    {
      name: 'absent-native-addons',
      setup(b) {
        b.onResolve({ filter: OPTIONAL_NATIVE }, (a) => ({ path: a.path, namespace: 'absent' }));
        for (const u of UNUSED_TRANSPORTS) {
          b.onResolve({ filter: u.filter }, (a) =>
            u.importer.test(a.importer) ? { path: a.path, namespace: 'unused' } : undefined,
          );
        }
        b.onLoad({ filter: /.*/, namespace: 'unused' }, (a) => ({
          contents: `module.exports = () => { throw new Error(${JSON.stringify(`crishim: ${a.path} is not used`)}); };`,
          loader: 'js',
        }));
        b.onLoad({ filter: /.*/, namespace: 'absent' }, (a) => ({
          contents: `throw new Error(${JSON.stringify(`${a.path} is not part of the crishim executable`)});`,
          loader: 'js',
        }));
      },
    },
  ],
});

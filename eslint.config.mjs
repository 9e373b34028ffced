// Lint rules, including the layer walls described in ARCHITECTURE.md.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const GRPC = {
  name: '@grpc/grpc-js',
  message:
    'Only src/server/ (and main.ts/daemon.ts wiring) speaks gRPC; throw a DomainError from src/errors.ts instead.',
};
const DOCKERODE = {
  name: 'dockerode',
  message:
    'Only src/docker/ imports dockerode; call Docker through DockerEngine (src/docker/engine.ts) and name its objects with src/docker/types.ts.',
};
const DOCKER_MODEM = {
  name: 'docker-modem',
  message:
    'Only src/docker/ touches docker-modem; wrap a DockerEngine (as instrumented-engine.ts does) to see every call.',
};
// The one DockerEngine implementation is chosen by the process wiring; everyone else gets the interface.
const DOCKER_IMPL = {
  group: ['**/docker/dockerode-engine', '**/docker/client'],
  message:
    'Use the DockerEngine you are given (src/docker/engine.ts); only main.ts/daemon.ts wire the dockerode implementation (connect with src/docker/connect.ts).',
};
const GRPC_MAPPING = {
  group: ['**/server/errors'],
  message:
    'The domain error -> gRPC status mapping belongs to the server layer; import DomainError and helpers from src/errors.ts.',
};

// A handler is one RPC: what two handlers share lives in a domain folder, not in a handler file.
const RPC_SIBLINGS = {
  group: ['./*', '../rpc/*'],
  message:
    'A handler in src/rpc/ imports no other handler; put what RPCs share in src/sandbox/, src/container/, src/images/ or src/cri/.',
};
// The domain folders serve the handlers and never reach up to them (ServiceDeps is src/service-deps.ts).
const UP_TO_RPC = {
  group: ['**/rpc/*'],
  message: 'Only the process wiring imports src/rpc/; what handlers and domain code share lives below it.',
};
// The layers under the handlers never reach up to them.
const UPWARD_FROM_LOW_LAYERS = {
  group: ['**/rpc/*', '**/cri/*', '**/sandbox/*', '**/container/*'],
  message:
    'src/docker/ and src/state/ sit below the handlers and the CRI model; move what both need down (e.g. src/labels.ts, src/time.ts).',
};

export default tseslint.config(
  { ignores: ['dist/**', 'bench/dist/**', 'dist-pkg/**', 'src/generated/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // a file a newcomer can read in one sitting (issue 13); split by concern when it grows past this
    files: ['src/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 300 }] },
  },
  // Layer walls (ARCHITECTURE.md). A later block replaces the rule's options for its files,
  // so each block lists everything still forbidden there. Tests and bench/ may use anything.
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [GRPC, DOCKERODE, DOCKER_MODEM], patterns: [GRPC_MAPPING, DOCKER_IMPL] },
      ],
    },
  },
  {
    // the transport: only the server layer and the process wiring speak gRPC
    files: ['src/server/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [DOCKERODE, DOCKER_MODEM], patterns: [DOCKER_IMPL] }] },
  },
  {
    // the process wiring: gRPC, and the choice of the Docker engine implementation
    files: ['src/main.ts', 'src/daemon.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [DOCKERODE, DOCKER_MODEM] }] },
  },
  {
    // the Docker boundary: dockerode (values and types) is imported here and nowhere else
    files: ['src/docker/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [GRPC], patterns: [GRPC_MAPPING, UPWARD_FROM_LOW_LAYERS] }] },
  },
  {
    files: ['src/state/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [GRPC, DOCKERODE, DOCKER_MODEM], patterns: [GRPC_MAPPING, UPWARD_FROM_LOW_LAYERS, DOCKER_IMPL] },
      ],
    },
  },
  {
    files: [
      'src/sandbox/**/*.ts',
      'src/container/**/*.ts',
      'src/images/**/*.ts',
      'src/cri/**/*.ts',
      'src/events/**/*.ts',
      'src/recovery/**/*.ts',
      'src/logs/**/*.ts',
      'src/stats/**/*.ts',
      'src/network/**/*.ts',
      'src/cgroups/**/*.ts',
      'src/streaming/**/*.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [GRPC, DOCKERODE, DOCKER_MODEM], patterns: [GRPC_MAPPING, DOCKER_IMPL, UP_TO_RPC] },
      ],
    },
  },
  {
    // one file per RPC; only the wiring (runtime-service.ts, image-service.ts) composes handlers
    files: ['src/rpc/**/*.ts'],
    ignores: ['src/rpc/runtime-service.ts', 'src/rpc/image-service.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [GRPC, DOCKERODE, DOCKER_MODEM], patterns: [GRPC_MAPPING, RPC_SIBLINGS, DOCKER_IMPL] },
      ],
    },
  },
);

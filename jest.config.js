/**
 * unit tests need nothing; e2e tests need a running dockerd and root; kubernetes tests also need
 * Kubernetes binaries (KUBE_BIN_DIR) and run only when asked for (`npm run test:kubernetes`).
 */
const base = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json' }] },
};
module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
    { ...base, displayName: 'kubernetes', testMatch: ['<rootDir>/test/kubernetes/**/*.test.ts'] },
  ],
};

import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { kubeBinaries } from '../kubernetes/binaries';

describe('the Kubernetes binaries the cluster tests need', () => {
  it('fails, naming the folder to set, when KUBE_BIN_DIR is not set', () => {
    expect(() => kubeBinaries(['kubelet'], {})).toThrow(/KUBE_BIN_DIR is not set.*kubelet/);
  });

  it('fails naming every binary the folder lacks or cannot run, and finds those it has', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'kube-bins-'));
    try {
      await fsp.writeFile(path.join(dir, 'kubelet'), '#!/bin/sh\n', { mode: 0o755 });
      await fsp.writeFile(path.join(dir, 'kubectl'), 'not executable', { mode: 0o644 });
      expect(() => kubeBinaries(['kubelet', 'kubectl', 'e2e.test'], { KUBE_BIN_DIR: dir })).toThrow(
        /lacks kubectl, e2e\.test/,
      );
      expect(kubeBinaries(['kubelet'], { KUBE_BIN_DIR: dir }).path('kubelet')).toBe(path.join(dir, 'kubelet'));
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The images Kubernetes' e2e specs run, served from a registry on 127.0.0.1. The e2e binary takes
 * its registries from KUBE_TEST_REPO_LIST: every one points at that registry, or at a closed port
 * on 127.0.0.1 for the specs that expect a pull to fail, so no pull ever leaves this machine.
 */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { docker } from '../e2e/harness';
import { startRegistry, type Registry } from '../e2e/registry';

const UPSTREAM = 'registry.k8s.io/';
/** Nothing listens on port 9 (discard) here: a pull from it is refused at once. */
const REFUSED = '127.0.0.1:9';

export interface E2eRegistry {
  /** The repo list file, for KUBE_TEST_REPO_LIST. */
  repoList: string;
  /** The images under their names in the local registry (also tagged in Docker). */
  images: string[];
  stop(): Promise<void>;
}

/** The e2e stand-ins and pause images test/kubernetes/images.sh built into Docker. */
function localImages(): string[] {
  return execFileSync('docker', ['images', '--format', '{{.Repository}}:{{.Tag}}'], { encoding: 'utf8' })
    .split('\n')
    .filter(
      (r) =>
        r.startsWith(`${UPSTREAM}e2e-test-images/`) ||
        r.startsWith(`${UPSTREAM}pause:`) ||
        r.startsWith(`${UPSTREAM}etcd:`),
    );
}

async function push(ref: string): Promise<void> {
  const stream = await docker.getImage(ref).push({ authconfig: { serveraddress: ref.split('/')[0] } });
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: Array<{ error?: string }>) =>
      err || out.some((o) => o.error) ? reject(err ?? new Error(out.find((o) => o.error)?.error)) : resolve(),
    ),
  );
}

export async function startE2eRegistry(dir: string): Promise<E2eRegistry> {
  const local = localImages();
  if (!local.some((r) => r.includes('/e2e-test-images/agnhost:')))
    throw new Error('no e2e stand-in images in Docker: run test/kubernetes/images.sh KUBE_BIN_DIR');
  const reg: Registry = await startRegistry();
  const images: string[] = [];
  try {
    for (const ref of local) {
      const mirrored = `${reg.host}/${ref.slice(UPSTREAM.length)}`;
      const [repo, tag] = mirrored.split(/:(?=[^:/]+$)/);
      await docker.getImage(ref).tag({ repo, tag });
      images.push(mirrored);
      await push(mirrored);
    }
  } catch (err) {
    await reg.stop();
    throw err;
  }
  const h = reg.host;
  const list = {
    promoterE2eRegistry: `${h}/e2e-test-images`,
    gcRegistry: h,
    gcEtcdRegistry: h,
    buildImageRegistry: `${h}/build-image`,
    sigStorageRegistry: `${h}/sig-storage`,
    dockerLibraryRegistry: `${h}/library`,
    cloudProviderGcpRegistry: `${h}/cloud-provider-gcp`,
    // the images the pull-failure specs ask for are absent from it
    gcAuthenticatedRegistry: `${h}/authenticated-image-pulling`,
    privateRegistry: `${h}/k8s-authenticated-test`,
    invalidRegistry: `${REFUSED}/invalid`,
    microsoftRegistry: `${REFUSED}/microsoft`,
  };
  const repoList = path.join(dir, 'repo-list.yaml');
  await fsp.writeFile(
    repoList,
    Object.entries(list)
      .map(([k, v]) => `${k}: ${v}\n`)
      .join(''),
  );
  return {
    repoList,
    images,
    async stop() {
      // the tags only: the images stay under their upstream names
      for (const ref of images)
        await docker
          .getImage(ref)
          .remove()
          .catch(() => undefined);
      await reg.stop();
    },
  };
}

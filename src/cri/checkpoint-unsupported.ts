import { unimplemented } from '../errors';

/**
 * Docker's checkpoint support is experimental, needs CRIU and cannot export an
 * archive the kubelet can restore elsewhere, so CheckpointContainer, CheckpointPod and
 * RestorePod (src/rpc/) answer why they are absent.
 */
export function checkpointUnsupported(method: string) {
  return async (): Promise<never> => {
    throw unimplemented(
      `${method}: Docker Engine checkpoints need experimental mode and CRIU, and export no archive a CRI client can restore; crishim does not offer it`,
    );
  };
}

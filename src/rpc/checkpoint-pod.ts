import { checkpointUnsupported } from '../cri/checkpoint-unsupported';

/** CheckpointPod: unsupported over Docker (see cri/checkpoint-unsupported.ts). */
export const checkpointPod = checkpointUnsupported('CheckpointPod');

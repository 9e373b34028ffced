import { checkpointUnsupported } from '../cri/checkpoint-unsupported';

/** CheckpointContainer: unsupported over Docker (see cri/checkpoint-unsupported.ts). */
export const checkpointContainer = checkpointUnsupported('CheckpointContainer');

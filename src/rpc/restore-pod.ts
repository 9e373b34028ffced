import { checkpointUnsupported } from '../cri/checkpoint-unsupported';

/** RestorePod: unsupported over Docker (see cri/checkpoint-unsupported.ts). */
export const restorePod = checkpointUnsupported('RestorePod');

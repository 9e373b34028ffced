import { CriLogFile } from '../logging/cri-log';
import { type JsonFileCopy } from './json-file-copy';

/** One container's copy in progress; shared by the local and the logs-API copy. */
export interface Follower {
  /** Opened once the mode is known (the local mode first cuts the file back to its saved size). */
  file?: CriLogFile;
  /** The local copy, when this follower reads the json-file itself. */
  copy?: JsonFileCopy;
  done: Promise<void>;
  /** Aborts the current stream or wait. */
  interrupt: () => void;
  stopped: boolean;
  /** follow() was called again meanwhile (the container may have been started again). */
  kicked: boolean;
}

import { cancelled } from '../errors';

/**
 * How many ExecSync commands go into Docker at once. Each Docker exec costs dockerd, containerd and
 * a runc exec. A node's readiness probes (110 pods every 2 s) can ask for more than two cores give;
 * run all together, each takes longer than the kubelet's 1 s probe timeout, every probe fails and
 * is asked again, and no pod gets Ready. Let in a few at a time, each finishes within its timeout
 * while the rest wait their turn outside Docker, where the timeout does not run: it is the
 * command's own time, as in containerd's CRI. A slot is held until the command ends or for
 * `holdMs`, whichever comes first, so a long command keeps no one waiting for longer than that.
 */
export class ExecAdmission {
  private held = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly slots: number,
    private readonly holdMs: number,
  ) {}

  /** Waits for a slot and answers the function that gives it back (once, however often called). */
  enter(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(cancelled('cancelled while waiting to exec'));
    if (this.held < this.slots) return Promise.resolve(this.granted());
    return new Promise((resolve, reject) => {
      const admit = (): void => {
        signal.removeEventListener('abort', leave);
        resolve(this.granted());
      };
      const leave = (): void => {
        this.waiting.splice(this.waiting.indexOf(admit), 1);
        reject(cancelled('cancelled while waiting to exec'));
      };
      this.waiting.push(admit);
      signal.addEventListener('abort', leave, { once: true });
    });
  }

  /** Slots held and callers waiting. */
  get load(): { held: number; waiting: number } {
    return { held: this.held, waiting: this.waiting.length };
  }

  private granted(): () => void {
    this.held++;
    let holding = true;
    const release = (): void => {
      if (!holding) return;
      holding = false;
      clearTimeout(timer);
      this.held--;
      this.waiting.shift()?.();
    };
    const timer = setTimeout(release, this.holdMs);
    timer.unref();
    return release;
  }
}

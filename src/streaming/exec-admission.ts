import { cancelled } from '../errors';

/**
 * How many ExecSync commands go into Docker at once. Each Docker exec costs dockerd, containerd and
 * a runc exec. A node's readiness probes (110 pods every 2 s) can ask for more than two cores give;
 * run all together, each takes longer than the kubelet's 1 s probe timeout, every probe fails and
 * is asked again, and no pod gets Ready. Then only a few go in at a time, each finishes within its
 * timeout, and the rest wait their turn outside Docker, where the timeout does not run: it is the
 * command's own time, as in containerd's CRI. Until a command times out, many go in at once, as
 * Docker runs more execs a second side by side than a few at a time. A slot is held until the
 * command ends or for `holdMs`, whichever comes first, so a long command keeps no one waiting for
 * longer than that.
 */
export interface AdmissionLimits {
  /** Slots while commands finish in their time. */
  wide: number;
  /** Slots for `narrowForMs` after a command timed out. */
  narrow: number;
  narrowForMs: number;
  holdMs: number;
}

export class ExecAdmission {
  private held = 0;
  private readonly waiting: Array<() => void> = [];
  private narrowUntil = 0;

  constructor(private readonly limits: AdmissionLimits) {}

  /** A command ran past its timeout: Docker has more execs than it can run in time. */
  overloaded(): void {
    this.narrowUntil = performance.now() + this.limits.narrowForMs;
  }

  private get slots(): number {
    return performance.now() < this.narrowUntil ? this.limits.narrow : this.limits.wide;
  }

  /** Waits for a slot and answers the function that gives it back (once, however often called). */
  enter(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(cancelled('cancelled while waiting to exec'));
    // slots freed by the end of a narrow spell go to those already waiting first
    this.admitWaiting();
    if (this.held < this.slots && this.waiting.length === 0) return Promise.resolve(this.granted());
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

  /** Hands free slots to waiting callers, in the order they came. */
  private admitWaiting(): void {
    while (this.held < this.slots && this.waiting.length > 0) this.waiting.shift()?.();
  }

  private granted(): () => void {
    this.held++;
    let holding = true;
    const release = (): void => {
      if (!holding) return;
      holding = false;
      clearTimeout(timer);
      this.held--;
      this.admitWaiting();
    };
    const timer = setTimeout(release, this.limits.holdMs);
    timer.unref();
    return release;
  }
}

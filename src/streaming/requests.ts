/** What a streaming URL stands for: remembered under its token until a client redeems it. */
export type StreamRequest =
  | { kind: 'exec'; containerId: string; cmd: string[]; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }
  | { kind: 'attach'; containerId: string; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }
  | { kind: 'portforward'; podSandboxId: string; ports: number[] };

/** The ids a log line about a session carries. */
export function sessionIds(sr: StreamRequest): Record<string, string> {
  return sr.kind === 'portforward' ? { podSandboxId: sr.podSandboxId } : { containerId: sr.containerId };
}

/** A TCP port as a client names it (decimal, 1-65535), or undefined. */
export function parsePort(v: string | undefined): number | undefined {
  if (v === undefined || !/^\d{1,5}$/.test(v)) return undefined;
  const n = Number(v);
  return n >= 1 && n <= 65535 ? n : undefined;
}

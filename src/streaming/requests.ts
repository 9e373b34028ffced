/** What a streaming URL stands for: remembered under its token until a client redeems it. */
export type StreamRequest =
  | { kind: 'exec'; containerId: string; cmd: string[]; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }
  | { kind: 'attach'; containerId: string; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }
  | { kind: 'portforward'; podSandboxId: string; ports: number[] };

/** The ids a log line about a session carries. */
export function sessionIds(sr: StreamRequest): Record<string, string> {
  return sr.kind === 'portforward' ? { podSandboxId: sr.podSandboxId } : { containerId: sr.containerId };
}

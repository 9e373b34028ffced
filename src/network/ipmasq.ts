import { execFile } from 'child_process';
import type { NetworkConfList } from './cni-config';

/**
 * The bridge plugin (containernetworking/plugins up to at least v1.9, Debian's
 * v1.1.1 included) releases the IP but skips its ipMasq teardown when DEL gets
 * an empty CNI_NETNS, because it reads the pod's addresses from the netns
 * (plugins issue 810, unmerged PR 1078). Every pod whose netns was gone at
 * teardown (crash recovery, a dead pause container) would leak a POSTROUTING
 * jump and a `CNI-<hash>` chain. This removes exactly the rules the plugin made
 * for one container, found by the comment it tags them with.
 */

/** The comment bridge puts on its ipMasq rules (pkg/utils FormatComment). */
export function ipMasqComment(network: string, containerId: string): string {
  return `name: "${network}" id: "${containerId}"`;
}

/** Whether DEL without a netns leaves ipMasq rules of this config behind. */
export function needsIpMasqCleanup(config: NetworkConfList): boolean {
  return config.plugins.some((p) => p.type === 'bridge' && p.ipMasq === true);
}

export interface MasqRule {
  source: string;
  chain: string;
}

/**
 * The POSTROUTING jumps for one container in `iptables -t nat -S POSTROUTING`
 * output. iptables prints the comment with its inner quotes escaped.
 */
export function findMasqRules(rulesText: string, network: string, containerId: string): MasqRule[] {
  const comment = `"${ipMasqComment(network, containerId).replace(/"/g, '\\"')}"`;
  const rules: MasqRule[] = [];
  for (const line of rulesText.split('\n')) {
    if (!line.startsWith('-A POSTROUTING ') || !line.includes(`--comment ${comment}`)) continue;
    const source = / -s (\S+)/.exec(line)?.[1];
    const chain = / -j (CNI-[0-9a-f]+)(?:\s|$)/.exec(line)?.[1];
    if (source && chain) rules.push({ source, chain });
  }
  return rules;
}

type Run = (bin: string, args: string[]) => Promise<string>;

const runIptables: Run = (bin, args) =>
  new Promise((resolve, reject) => {
    // -w: wait for the xtables lock other plugins may hold, rather than fail
    execFile(bin, ['-w', '5', ...args], { timeout: 15_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${bin} ${args.join(' ')}: ${stderr.trim() || err.message}`)) : resolve(stdout),
    );
  });

/** Removes the ipMasq rules and chains bridge made for a container (IPv4 and IPv6); returns the chains removed. */
export async function cleanupIpMasq(network: string, containerId: string, run: Run = runIptables): Promise<string[]> {
  const comment = ipMasqComment(network, containerId);
  const removed: string[] = [];
  const errors: string[] = [];
  for (const bin of ['iptables', 'ip6tables']) {
    let text: string;
    try {
      text = await run(bin, ['-t', 'nat', '-S', 'POSTROUTING']);
    } catch {
      continue; // no ip6tables, or no nat table for this family: nothing of ours there either
    }
    const rules = findMasqRules(text, network, containerId);
    // every jump first: a chain still referenced (two addresses of one family) cannot be deleted
    for (const r of rules) {
      await run(bin, [
        '-t',
        'nat',
        '-D',
        'POSTROUTING',
        '-s',
        r.source,
        '-m',
        'comment',
        '--comment',
        comment,
        '-j',
        r.chain,
      ]).catch((err: Error) => errors.push(err.message));
    }
    for (const chain of new Set(rules.map((r) => r.chain))) {
      try {
        await run(bin, ['-t', 'nat', '-F', chain]);
        await run(bin, ['-t', 'nat', '-X', chain]);
        removed.push(chain);
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
  }
  if (errors.length) throw new Error(`removing leftover ipMasq rules: ${errors.join('; ')}`);
  return removed;
}

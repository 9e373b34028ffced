/** Removal of the ipMasq rules the bridge plugin leaves behind on a DEL without netns. */
import { cleanupIpMasq, findMasqRules, ipMasqComment, needsIpMasqCleanup } from '../../src/network/ipmasq';

const ID = 'd287d4265e722232a406d95f112f86b65f61a361e8563224da43a68dfe3552fc';
const OTHER = '746c0d265a9481081c8f6ce99d9c2cf50bfd625b967d50cd1572232b0805badb';
// as iptables-nft 1.8.9 prints them
const RULES = [
  '-P POSTROUTING ACCEPT',
  '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
  `-A POSTROUTING -s 10.88.250.2/32 -m comment --comment "name: \\"crishim\\" id: \\"${ID}\\"" -j CNI-3b66ad97e54d872fe77932df`,
  `-A POSTROUTING -s 10.88.250.3/32 -m comment --comment "name: \\"crishim\\" id: \\"${OTHER}\\"" -j CNI-38cbc76918f4b88c37781742`,
  `-A POSTROUTING -s 10.88.250.9/32 -m comment --comment "name: \\"crishim-other\\" id: \\"${ID}\\"" -j CNI-0000000000000000000000aa`,
  `-A POSTROUTING -s 10.88.250.4/32 -m comment --comment "name: \\"crishim\\" id: \\"${ID}\\"" -j CNI-3b66ad97e54d872fe77932df`,
].join('\n');

it('finds only the rules of that network and container', () => {
  expect(findMasqRules(RULES, 'crishim', ID)).toEqual([
    { source: '10.88.250.2/32', chain: 'CNI-3b66ad97e54d872fe77932df' },
    { source: '10.88.250.4/32', chain: 'CNI-3b66ad97e54d872fe77932df' },
  ]);
  expect(findMasqRules(RULES, 'crishim', 'f'.repeat(64))).toEqual([]);
});

it('is needed only for a bridge with ipMasq', () => {
  const conf = (plugins: Array<Record<string, unknown> & { type: string }>) => ({
    cniVersion: '0.4.0',
    name: 'n',
    file: 'f',
    plugins,
  });
  expect(needsIpMasqCleanup(conf([{ type: 'bridge', ipMasq: true }, { type: 'portmap' }]))).toBe(true);
  expect(needsIpMasqCleanup(conf([{ type: 'bridge' }]))).toBe(false);
  expect(needsIpMasqCleanup(conf([{ type: 'ptp', ipMasq: true }]))).toBe(false);
});

it('deletes every jump before flushing and deleting the chain, per address family', async () => {
  const calls: string[] = [];
  const run = async (bin: string, args: string[]): Promise<string> => {
    calls.push(`${bin} ${args.join(' ')}`);
    if (bin === 'ip6tables') throw new Error('ip6tables: table nat does not exist');
    return args.includes('-S') ? RULES : '';
  };
  expect(await cleanupIpMasq('crishim', ID, run)).toEqual(['CNI-3b66ad97e54d872fe77932df']);
  const comment = ipMasqComment('crishim', ID);
  expect(comment).toBe(`name: "crishim" id: "${ID}"`);
  expect(calls).toEqual([
    'iptables -t nat -S POSTROUTING',
    `iptables -t nat -D POSTROUTING -s 10.88.250.2/32 -m comment --comment ${comment} -j CNI-3b66ad97e54d872fe77932df`,
    `iptables -t nat -D POSTROUTING -s 10.88.250.4/32 -m comment --comment ${comment} -j CNI-3b66ad97e54d872fe77932df`,
    'iptables -t nat -F CNI-3b66ad97e54d872fe77932df',
    'iptables -t nat -X CNI-3b66ad97e54d872fe77932df',
    'ip6tables -t nat -S POSTROUTING',
  ]);
});

it('reports a failed removal', async () => {
  const run = async (bin: string, args: string[]): Promise<string> => {
    if (args.includes('-X')) throw new Error(`${bin}: chain busy`);
    return args.includes('-S') && bin === 'iptables' ? RULES : '';
  };
  await expect(cleanupIpMasq('crishim', ID, run)).rejects.toThrow(
    'removing leftover ipMasq rules: iptables: chain busy',
  );
});

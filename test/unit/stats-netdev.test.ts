import { parseNetDev } from '../../src/stats/netdev';

const TEXT = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0
  eth0:  123456     200    2    0    0     0          0         0    65432     150    1    0    0     0       0          0
 net1:12345678901   9    0    0    0     0          0         0        7       1    3    0    0     0       0          0
`;

describe('/proc/<pid>/net/dev', () => {
  it('reads bytes and errors per interface, leaves loopback out, copes with a counter glued to the colon', () => {
    expect(parseNetDev(Buffer.from(TEXT))).toEqual([
      { name: 'eth0', rxBytes: 123456, rxErrors: 2, txBytes: 65432, txErrors: 1 },
      { name: 'net1', rxBytes: 12345678901, rxErrors: 0, txBytes: 7, txErrors: 3 },
    ]);
  });
  it('an empty namespace (only loopback) has no interfaces', () => {
    expect(parseNetDev(Buffer.from(TEXT.split('\n').slice(0, 3).join('\n')))).toEqual([]);
  });
  it('reads only the bytes it is told are the file (a reused buffer holds an older, longer text past them)', () => {
    const lines = TEXT.split('\n');
    const current = [...lines.slice(0, 3), lines[3].replace('123456', '999')].join('\n');
    const older = Buffer.from(TEXT + TEXT);
    older.write(current, 0, 'latin1');
    expect(parseNetDev(older, current.length)).toEqual([
      { name: 'eth0', rxBytes: 999, rxErrors: 2, txBytes: 65432, txErrors: 1 },
    ]);
    // a length inside eth0's first counter: what follows it in the buffer is not the file's
    expect(parseNetDev(older, current.indexOf('999') + 2)).toEqual([]);
  });
  it('skips a line with too few counters and reads a last line without a newline', () => {
    const lines = TEXT.trimEnd().split('\n');
    const text = [...lines.slice(0, 3), '  cut0:  5 6 7', lines[3]].join('\n');
    expect(parseNetDev(Buffer.from(text))).toEqual([
      { name: 'eth0', rxBytes: 123456, rxErrors: 2, txBytes: 65432, txErrors: 1 },
    ]);
  });
});

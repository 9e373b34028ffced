// node qmp-snapshot.mjs QMP_SOCKET KALLSYMS [ROUNDS]: what a frozen guest's CPUs are doing, seen
// from qemu (run-in-vm.sh calls it before ending a VM whose heartbeat stopped). Each round
// prints every vCPU's instruction pointer as a kernel symbol (from the guest's /proc/kallsyms,
// which vm-init.sh sends out at boot), or "user", and whether it is halted, and the guest's
// jiffies: jiffies that do not move mean its timer interrupts stopped, moving ones a CPU
// spinning with timers alive.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';

const [socketPath, symbolsPath, roundsArg] = process.argv.slice(2);
if (!socketPath || !symbolsPath) {
  console.error('usage: qmp-snapshot.mjs QMP_SOCKET KALLSYMS [ROUNDS]');
  process.exit(2);
}
const rounds = Number(roundsArg ?? 5);

/** The symbols file's text; empty when the guest froze before vm-init.sh wrote it (raw addresses, then). */
function symbolsText() {
  try {
    return readFileSync(symbolsPath, 'latin1');
  } catch {
    return '';
  }
}
// kallsyms lines: address, type, name, and a module's name in brackets after a tab
const lines = symbolsText()
  .split('\n')
  .map((line) => line.split(/\s+/));
/** Text symbols by address, for the greatest one at or below an instruction pointer. */
const symbols = lines
  .filter(([, type]) => type === 't' || type === 'T')
  .map(([addr, , name, module]) => ({ addr: BigInt(`0x${addr}`), name: module ? `${name} ${module}` : name }))
  .sort((a, b) => (a.addr < b.addr ? -1 : a.addr > b.addr ? 1 : 0));
const jiffiesAt = lines.find(([, , name]) => name === 'jiffies_64')?.[0];

function symbolOf(rip) {
  let lo = 0;
  let hi = symbols.length - 1;
  if (hi < 0 || rip < symbols[0].addr) return `0x${rip.toString(16)}`;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (symbols[mid].addr <= rip) lo = mid;
    else hi = mid - 1;
  }
  return `${symbols[lo].name}+0x${(rip - symbols[lo].addr).toString(16)}`;
}

/** One QMP session: commands in turn, answers matched in order (events are skipped). */
function session(path) {
  const socket = connect(path);
  let buffered = '';
  const waiting = [];
  socket.setEncoding('utf8');
  socket.on('error', (err) => {
    console.error(`qmp-snapshot: ${err.message}`);
    process.exit(1);
  });
  socket.on('data', (chunk) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (!line) continue;
      const msg = JSON.parse(line);
      if (msg.event) continue;
      waiting.shift()?.(msg);
    }
  });
  const next = () => new Promise((resolve) => waiting.push(resolve));
  const greeting = next();
  return {
    ready: greeting,
    async ask(execute, args) {
      const answer = next();
      socket.write(`${JSON.stringify(args ? { execute, arguments: args } : { execute })}\n`);
      const msg = await answer;
      if (msg.error) throw new Error(`${execute}: ${msg.error.desc}`);
      return msg.return;
    },
    hmp(commandLine) {
      return this.ask('human-monitor-command', { 'command-line': commandLine });
    },
    close: () => socket.end(),
  };
}

const qmp = session(socketPath);
const limit = setTimeout(() => {
  console.error('qmp-snapshot: qemu did not answer in 30 s');
  process.exit(1);
}, 30_000);
await qmp.ready;
await qmp.ask('qmp_capabilities');
for (let round = 1; round <= rounds; round++) {
  const regs = await qmp.hmp('info registers -a');
  const cpus = regs.split(/^(?=CPU#\d+)/m).filter((block) => block.startsWith('CPU#'));
  const described = cpus.map((block) => {
    const cpu = block.match(/^CPU#(\d+)/)[1];
    const rip = block.match(/[RE]IP=([0-9a-f]+)/)?.[1];
    const cpl = block.match(/CPL=(\d)/)?.[1];
    const halted = block.match(/HLT=(\d)/)?.[1] === '1';
    const where = rip === undefined ? '?' : cpl === '0' ? symbolOf(BigInt(`0x${rip}`)) : `user 0x${rip}`;
    return `cpu${cpu} ${where}${halted ? ' (halted)' : ''}`;
  });
  let jiffies = '?';
  // by physical address (the kernel image maps at 0xffffffff80000000 + its load offset, 0 with
  // nokaslr): a CPU in user mode may run on page tables without the kernel's data
  if (jiffiesAt) {
    const phys = BigInt(`0x${jiffiesAt}`) - 0xffffffff80000000n;
    jiffies = (await qmp.hmp(`xp /1gu 0x${phys.toString(16)}`)).split(':')[1]?.trim() ?? '?';
  }
  console.log(`qmp round ${round}: jiffies ${jiffies}; ${described.join('; ')}`);
  if (round < rounds) await sleep(2000);
}
clearTimeout(limit);
qmp.close();

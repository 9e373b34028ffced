#!/bin/bash
# The cgroup v2 test VM's one job (run-in-vm.sh): start dockerd, load the images handed in,
# run one command in the project, report its exit code and power off. Two modes:
#  - PID 1 (cgroupfs, the default): no systemd, so this mounts a cgroup v2-only system
#    itself and runs dockerd with the cgroupfs driver; boots in seconds under emulation.
#  - run by systemd's crishim-vm.service (build-vm.sh; CRISHIM_VM_CGROUP_DRIVER=systemd):
#    systemd has mounted everything, and starts docker.service with the systemd driver.
#
# From the host through qemu's fw_cfg: opt/crishim/project (the path the project disk
# is mounted at), opt/crishim/command, opt/crishim/timeout (seconds the command may run),
# opt/crishim/images (bytes of a `docker save` tar on the disk with serial "images";
# absent when none). Back on virtio-serial ports:
# "output" (the command's stdout and stderr), "control" ("alive" at once and every 20 s, then "rc N"),
# "symbols" (the kernel's text symbols, to name a frozen guest's CPUs from outside).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
cd /

power_off() {
  sync
  busybox poweroff -f
}
control() { [ -w /dev/fd/3 ] && echo "$*" >&3; }
fail() {
  echo "vm-init: $*" | tee "${OUTPUT:-/dev/console}"
  control "rc 125"
  power_off
}

# the one hierarchy, every controller handed down to the children as systemd would
delegate() { for c in $(<"$1/cgroup.controllers"); do echo "+$c" >"$1/cgroup.subtree_control"; done; }
# PID 1, no systemd: the mounts systemd would have made
if [ $$ -eq 1 ]; then
  mountpoint -q /proc || mount -t proc proc /proc
  mountpoint -q /sys || mount -t sysfs sysfs /sys
  mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
  mkdir -p /dev/pts /dev/shm /dev/mqueue
  mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
  mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
  mount -t mqueue mqueue /dev/mqueue
  mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
  [ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
  mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup || fail "cannot mount cgroup2"
  delegate /sys/fs/cgroup
fi

# what Docker's bridge networking, the CNI plugins and the host channels need
modprobe -a virtio_console qemu_fw_cfg overlay bridge br_netfilter veth nf_conntrack nf_nat \
  nf_tables nft_compat nft_chain_nat nft_ct nft_masq ip_tables iptable_nat iptable_filter \
  iptable_mangle ip6_tables ip6table_nat ip6table_filter xt_MASQUERADE xt_conntrack xt_addrtype \
  xt_comment xt_mark xt_multiport xt_nat xt_tcpudp ip_set xt_set 2>/dev/null

fw=/sys/firmware/qemu_fw_cfg/by_name/opt/crishim
for _ in $(seq 100); do
  [ -d "$fw" ] && ls /sys/class/virtio-ports/*/name >/dev/null 2>&1 && break
  sleep 0.1
done
for port in /sys/class/virtio-ports/*; do
  case "$(cat "$port/name")" in
    output) OUTPUT=/dev/${port##*/} ;;
    control) exec 3>"/dev/${port##*/}" ;;
    symbols) symbols=/dev/${port##*/} ;;
  esac
done
[ -n "${OUTPUT:-}" ] || fail "no output port"
# a heartbeat for run-in-vm.sh, which ends a guest that stops making progress
(while control alive; do sleep 20; done) &
# what run-in-vm.sh's qmp-snapshot.mjs names instruction pointers with, if the guest freezes
[ -z "${symbols:-}" ] || nice -n 19 grep -E ' [tT] | jiffies_64$' /proc/kallsyms >"$symbols" &
project=$(cat "$fw/project/raw")
command=$(cat "$fw/command/raw")
images=$(cat "$fw/images/raw" 2>/dev/null)

disk() {
  for b in /sys/block/vd*; do
    [ "$(cat "$b/serial" 2>/dev/null)" = "$1" ] && echo "/dev/${b##*/}" && return
  done
}
mkdir -p "$project"
mount -o noatime "$(disk project)" "$project" || fail "cannot mount the project at $project"
rmdir "$project/lost+found" 2>/dev/null

hostname crishim-cgroup2
ip link set lo up
sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1

if [ $$ -eq 1 ]; then
  # dockerd in a cgroup of its own, as under systemd: Docker 20.10 looks for memory.swap.max
  # in its own cgroup, and the root cgroup has none
  docker_cg=/sys/fs/cgroup/system.slice/docker.service
  mkdir -p "$docker_cg"
  delegate /sys/fs/cgroup/system.slice
  (
    echo $BASHPID >"$docker_cg/cgroup.procs"
    exec dockerd --exec-opt native.cgroupdriver=cgroupfs
  ) >/run/dockerd.log 2>&1 &
  dockerd_log() { tail -n "${1:-5}" /run/dockerd.log; }
else
  # Debian's docker.service, as a node runs it; build-vm.sh's drop-in picks the driver
  dockerd_log() { journalctl -b -u docker.service -u containerd.service -n "${1:-5}" -o cat; }
  systemctl start docker.service || fail "docker.service did not start: $(dockerd_log)"
fi
for _ in $(seq 600); do
  docker version >/dev/null 2>&1 && break
  sleep 0.5
done
docker version >/dev/null 2>&1 || fail "dockerd did not answer: $(dockerd_log)"
if [ -n "$images" ]; then
  head -c "$images" "$(disk images)" | docker load >"$OUTPUT" 2>&1 || fail "docker load failed"
fi

# what a hung run was doing, taken before it is killed: the processes and where each one
# waits in the kernel, the containers, the kernel's list of blocked tasks, the last log lines
# of Docker and of the tests' crishims
diagnose() {
  echo "vm-init: the command has run $((limit - 30)) of its $limit seconds; what the VM is doing:"
  ps -eo pid,ppid,etimes,stat,pcpu,wchan:24,args --sort=pid | grep -v ' \[.*\]$' | cut -c1-240
  timeout 20 docker ps -a --format '{{.ID}} {{.Status}} {{.Names}}' | head -n 40
  dmesg --level=emerg,alert,crit,err,warn | tail -n 20
  echo w >/proc/sysrq-trigger && sleep 1 && dmesg | sed -n '/sysrq: Show Blocked State/,$p' | tail -n 80
  dockerd_log 40
  # the e2e harness's daemons (test/e2e/harness.ts): what each did last
  for log in /tmp/crishim-e2e-*/crishim.log; do
    [ -e "$log" ] && echo "== $log" && tail -n 15 "$log" | cut -c1-400
  done
}
cd "$project" || fail "cannot enter $project"
# a hang inside must end before run-in-vm.sh's own timeout kills qemu, so that it says why
limit=$(cat "$fw/timeout/raw" 2>/dev/null || echo 1620)
# a port opens once at a time: the command and the watchdog share one open file
exec 4>"$OUTPUT"
(sleep $((limit - 30)) && diagnose) >&4 2>&1 &
watchdog=$!
timeout -k 10 "$limit" bash -c "$command" </dev/null >&4 2>&1
rc=$?
kill "$watchdog" 2>/dev/null
control "rc $rc"
cd /
power_off

#!/bin/bash
# run-in-vm.sh PROJECT 'COMMAND': runs COMMAND in a copy of PROJECT (at the same path) inside
# the cgroup v2 test VM that build-vm.sh made, with dockerd up and, when CRISHIM_VM_IMAGES
# names a `docker save` tar, its images loaded. The command's output goes to stdout; the exit
# code is the command's (125: the VM failed; 124: CRISHIM_VM_TIMEOUT seconds, default 1800, ran
# out: the command is stopped 180 s before, after vm-init.sh has printed what the VM was doing;
# 126: the guest stopped making progress, no heartbeat for 180 s, and was ended then).
# The VM has no network device: nothing it runs reaches past its own loopback and bridges.
# CRISHIM_VM_CGROUP_DRIVER: cgroupfs (the default: vm-init.sh is PID 1, no systemd) or
# systemd (systemd is PID 1 and dockerd uses its cgroup driver, as on most Kubernetes nodes).
set -euo pipefail
VM=${CRISHIM_VM_DIR:-/var/tmp/crishim-cgroup2-vm}
[ $# -eq 2 ] || { echo "usage: $0 PROJECT 'COMMAND'" >&2; exit 2; }
project=$(realpath -e "$1")
for f in root.img vmlinuz initrd.img; do
  [ -e "$VM/$f" ] || { echo "run-in-vm: no $VM/$f: run test/cgroup2/build-vm.sh first" >&2; exit 125; }
done
# kernel warnings on the console too (a clocksource given up, a stalled CPU): its tail is all
# a run that hangs past the command's own limit leaves
# nokaslr: the kernel's data at a known physical address, read from outside if the guest freezes
append="console=ttyS0 cgroup_no_v1=all panic=-1 loglevel=5 nokaslr"
case ${CRISHIM_VM_CGROUP_DRIVER:-cgroupfs} in
  cgroupfs) ;;
  systemd)
    # a VM built before the systemd mode existed would boot the cgroupfs one without a word
    [ -e "$VM/rootfs/etc/systemd/system/crishim-vm.service" ] ||
      { echo "run-in-vm: $VM has no systemd mode: run test/cgroup2/build-vm.sh" >&2; exit 125; }
    # straight into our service (build-vm.sh), which runs vm-init.sh: no getty, no multi-user
    append+=" init=/lib/systemd/systemd systemd.unit=crishim-vm.service"
    append+=" systemd.unified_cgroup_hierarchy=1 systemd.show_status=error"
    ;;
  *) echo "run-in-vm: CRISHIM_VM_CGROUP_DRIVER is cgroupfs or systemd" >&2; exit 2 ;;
esac
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT

# the project as a disk of its own: writes in the VM never reach this machine's copy
kib=$(du -sk --apparent-size "$project" | cut -f1)
files=$(find "$project" -xdev | wc -l)
# the disks grow in $run: the project's copy, and what the VM writes (about 100 MiB a run)
avail=$(df -Pk "$run" | awk 'NR == 2 {print $4}')
[ "$avail" -ge $((kib + 1048576)) ] ||
  { echo "run-in-vm: $((avail / 1024)) MiB free in $run, the VM's disks need $((kib / 1024 + 1024))" >&2; exit 125; }
truncate -s $((kib * 2 / 1024 + 4096))M "$run/project.img"
mkfs.ext4 -q -F -O ^has_journal -N $((files * 2 + 65536)) -d "$project" "$run/project.img"
# the root disk as a throwaway overlay: every run starts with an empty Docker
qemu-img create -q -f qcow2 -F raw -b "$VM/root.img" "$run/root.qcow2"

printf '%s' "$project" >"$run/project"
printf '%s' "$2" >"$run/command"
# the command's own limit, inside: time left to boot, load the images and power off
timeout=${CRISHIM_VM_TIMEOUT:-1800}
[ "$timeout" -gt 300 ] || { echo "run-in-vm: CRISHIM_VM_TIMEOUT must be more than 300 seconds" >&2; exit 2; }
printf '%s' $((timeout - 180)) >"$run/timeout"
extra=()
if [ -n "${CRISHIM_VM_IMAGES:-}" ]; then
  stat -c %s "$CRISHIM_VM_IMAGES" | tr -d '\n' >"$run/images"
  # a disk is read in whole sectors: padded, and the VM reads back only the tar's bytes
  cp "$CRISHIM_VM_IMAGES" "$run/images.tar"
  truncate -s %512 "$run/images.tar"
  # shellcheck disable=SC2054 # qemu's own option syntax has the commas
  extra+=(-fw_cfg "name=opt/crishim/images,file=$run/images"
    -drive "file=$run/images.tar,if=none,id=images,format=raw,readonly=on"
    -device virtio-blk-pci,drive=images,serial=images)
fi

: >"$run/control"
mkfifo "$run/output"
cat "$run/output" &
reader=$!
# software emulation on both cores: this machine's /dev/kvm resets a guest before its kernel
# starts (and refuses -cpu host).
# werror=report: when the host's disk fills up, qemu's default pauses the VM without a word
# until the timeout; the guest gets I/O errors instead, which its console shows
timeout -k 10 "$timeout" qemu-system-x86_64 -nodefaults -no-user-config -nographic \
  -monitor none -qmp "unix:$run/qmp.sock,server=on,wait=off" \
  -machine q35 -accel tcg,thread=multi,tb-size=512 -cpu max -smp 2 -m 4096 \
  -no-reboot -nic none -kernel "$VM/vmlinuz" -initrd "$VM/initrd.img" \
  -append "$append" \
  -serial "file:$run/console.log" \
  -drive "file=$run/root.qcow2,if=none,id=root,format=qcow2,cache=unsafe,werror=report" \
  -device virtio-blk-pci,drive=root,serial=root \
  -drive "file=$run/project.img,if=none,id=project,format=raw,cache=unsafe,werror=report" \
  -device virtio-blk-pci,drive=project,serial=project \
  -device virtio-rng-pci -device virtio-serial-pci \
  -chardev "file,id=output,path=$run/output" -device virtserialport,chardev=output,name=output \
  -chardev "file,id=control,path=$run/control" -device virtserialport,chardev=control,name=control \
  -chardev "file,id=symbols,path=$run/symbols" -device virtserialport,chardev=symbols,name=symbols \
  -fw_cfg "name=opt/crishim/project,file=$run/project" -fw_cfg "name=opt/crishim/command,file=$run/command" \
  -fw_cfg "name=opt/crishim/timeout,file=$run/timeout" \
  "${extra[@]}" </dev/null >"$run/qemu.log" 2>&1 &
vm=$!
# vm-init.sh writes "alive" on the control port as it starts and every 20 s. Seen twice under
# emulation: the guest spinning on both CPUs with its userland frozen, nothing on its console,
# its own watchdog stopped with it; end such a VM after this many seconds of silence instead
# of at the timeout. The boot counts too: the control file was made just before qemu started,
# and vm-init.sh's first word comes 20-60 s after
silence=180
frozen=0
while kill -0 "$vm" 2>/dev/null; do
  sleep 5
  if [ $(($(date +%s) - $(stat -c %Y "$run/control"))) -gt "$silence" ]; then
    frozen=1
    echo "run-in-vm: the guest's CPUs after $silence s without a heartbeat, as qemu sees them:" >&2
    timeout 60 node "$(dirname "$0")/qmp-snapshot.mjs" "$run/qmp.sock" "$run/symbols" >&2 || true
    kill "$vm" 2>/dev/null
    break
  fi
done
wait "$vm" && qemu=0 || qemu=$?
# qemu may have ended before it opened the fifo: open it once so the reader sees its end
exec 9<>"$run/output"
exec 9>&-
wait "$reader" || true
rc=$(sed -n 's/^rc \([0-9]*\)$/\1/p' "$run/control" | tail -n1)
if [ -z "$rc" ]; then
  [ "$qemu" = 124 ] && rc=124 || rc=125
  [ "$frozen" = 0 ] || { rc=126 && echo "run-in-vm: the guest sent no heartbeat for $silence s: ended" >&2; }
  echo "run-in-vm: the VM ended without an exit code (qemu: $qemu); its console:" >&2
  tail -n 40 "$run/console.log" "$run/qemu.log" >&2
  # the exit code comes back in a file there too
  echo "run-in-vm: free where the VM's disks were: $(df -h --output=avail "$run" | tail -n1)" >&2
fi
exit "$rc"

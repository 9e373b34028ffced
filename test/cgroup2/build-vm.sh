#!/bin/bash
# Builds the cgroup v2 test VM that run-in-vm.sh boots: this machine is cgroup v1 and cannot
# reboot into v2, and most Kubernetes nodes now run v2 only. Idempotent; in $CRISHIM_VM_DIR:
#   rootfs/     Debian bookworm with Docker, the CNI plugins, the registry and this machine's node
#               (and, for run-in-vm.sh's systemd mode, our systemd unit and dbus)
#   vmlinuz     its kernel, booted by run-in-vm.sh with cgroup v1 switched off
#   initrd.img  a busybox initramfs that only mounts the root disk (Debian's udev one is 8 s slower)
#   root.img    the root disk, each run gets a throwaway overlay of it
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VM=${CRISHIM_VM_DIR:-/var/tmp/crishim-cgroup2-vm}
mkdir -p "$VM"

need=()
for pkg in debootstrap qemu-system-x86 qemu-utils e2fsprogs cpio; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

root=$VM/rootfs
# what the e2e suites run in the VM call: Docker, CNI, the registry and htpasswd, ip, ping;
# for the systemd mode: dbus, the system bus that Docker's systemd cgroup driver talks to;
# apparmor, as Docker recommends: under systemd it sees the kernel's AppArmor and needs a parser
pkgs=linux-image-amd64,docker.io,containernetworking-plugins,iproute2,iptables,kmod,procps,busybox-static,iputils-ping,docker-registry,apache2-utils,ca-certificates,dbus,apparmor
if [ ! -e "$root/.crishim-complete" ]; then
  rm -rf "$root"
  echo "build-vm: debootstrap into $root (a few minutes)"
  debootstrap --include="$pkgs" bookworm "$root" >"$VM/debootstrap.log" 2>&1 ||
    { tail -20 "$VM/debootstrap.log"; exit 1; }
  touch "$root/.crishim-complete"
fi
# packages added to the list after the rootfs was made: apt in the rootfs (this machine
# reaches Debian's mirror; the VM has no network), starting no service (policy-rc.d)
add=$(tr , '\n' <<<"$pkgs" | while read -r p; do
  chroot "$root" dpkg -s "$p" >/dev/null 2>&1 || printf '%s ' "$p"
done)
if [ -n "$add" ]; then
  echo "build-vm: apt-get install into $root: $add"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  mount -t proc proc "$root/proc"
  ok=0
  # shellcheck disable=SC2086 # one package a word
  (chroot "$root" apt-get update && DEBIAN_FRONTEND=noninteractive chroot "$root" \
    apt-get install -y --no-install-recommends $add && chroot "$root" apt-get clean) >"$VM/apt.log" 2>&1 && ok=1
  umount "$root/proc"
  rm -f "$root/usr/sbin/policy-rc.d"
  [ "$ok" = 1 ] || { tail -20 "$VM/apt.log"; exit 1; }
fi

# the node that runs the tests here runs them there (Debian bookworm's is too old)
node=$(readlink -f "$(command -v node)")
missing=$(ldd "$node" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  [ -e "$root$lib" ] || echo "$lib"
done)
[ -z "$missing" ] || { echo "build-vm: the VM lacks libraries node needs: $missing" >&2; exit 1; }
install -m 0755 "$node" "$root/usr/bin/node"
install -m 0755 "$HERE/vm-init.sh" "$root/sbin/crishim-vm-init"

# the systemd mode (run-in-vm.sh boots systemd.unit=crishim-vm.service): vm-init.sh once the
# system bus is up, Docker's own unit with the systemd cgroup driver
cat >"$root/etc/systemd/system/crishim-vm.service" <<'EOF'
[Unit]
Description=crishim test VM: dockerd, the images, the command, power off
AllowIsolate=yes
Wants=dbus.service
After=dbus.service
# vm-init.sh powers off itself; this is for when it dies before (unit options, not [Service]'s)
FailureAction=poweroff-force
SuccessAction=poweroff-force
[Service]
Type=exec
ExecStart=/sbin/crishim-vm-init
StandardOutput=journal+console
# no task limit on the tests, as in the default mode
TasksMax=infinity
EOF
mkdir -p "$root/etc/systemd/system/docker.service.d"
cat >"$root/etc/systemd/system/docker.service.d/crishim-vm.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=/usr/sbin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock --exec-opt native.cgroupdriver=systemd
EOF
# what nothing here needs and costs seconds under emulation: waits for a network the VM
# has not, logins, timers, services no test uses, AppArmor profiles of other programs
# (4 s; Docker loads its own)
chroot "$root" systemctl mask -q apparmor.service networking.service ifupdown-wait-online.service \
  systemd-networkd-wait-online.service getty@.service serial-getty@.service \
  console-getty.service timers.target cron.service docker-registry.service e2scrub_reap.service \
  systemd-pstore.service systemd-random-seed.service systemd-update-utmp.service \
  systemd-journal-flush.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
  sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount sys-fs-fuse-connections.mount

kernel=$(ls "$root/lib/modules" | sort -V | tail -n1)
cp "$root/boot/vmlinuz-$kernel" "$VM/vmlinuz"
initramfs=$(mktemp -d)
trap 'rm -rf "$initramfs"' EXIT
mkdir -p "$initramfs"/{bin,lib/modules,dev,proc,sys,newroot}
cp "$root/bin/busybox" "$initramfs/bin/busybox"
install -m 0755 "$HERE/initramfs-init.sh" "$initramfs/init"
# the root disk's drivers, dependencies first (the order modprobe would load them in); ext4
# asks for crc32c by name at mount, which no modprobe in the initramfs could answer
chroot "$root" modprobe -S "$kernel" --show-depends -a virtio_pci virtio_blk crc32c_generic ext4 |
  awk '$1 == "insmod" {print $2}' | awk '!seen[$0]++' >"$initramfs/lib/modules/order"
while read -r ko; do cp "$root$ko" "$initramfs/lib/modules/"; done <"$initramfs/lib/modules/order"
sed -i 's|.*/||' "$initramfs/lib/modules/order"
(cd "$initramfs" && find . | cpio -o -H newc --quiet | gzip -1) >"$VM/initrd.img"

# no journal: the disk is thrown away after every run
rm -f "$VM/root.img"
truncate -s 20G "$VM/root.img"
mkfs.ext4 -q -F -O ^has_journal -E lazy_itable_init=0 -d "$root" "$VM/root.img"
echo "build-vm: $VM ready (kernel $kernel)"

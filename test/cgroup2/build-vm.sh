#!/bin/bash
# Builds the cgroup v2 test VM that run-in-vm.sh boots: this machine is cgroup v1 and cannot
# reboot into v2, and most Kubernetes nodes now run v2 only. Idempotent; in $CRISHIM_VM_DIR:
#   rootfs/     Debian bookworm with Docker, the CNI plugins, the registry and this machine's node
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
if [ ! -e "$root/.crishim-complete" ]; then
  rm -rf "$root"
  echo "build-vm: debootstrap into $root (a few minutes)"
  # what the e2e suites run in the VM call: Docker, CNI, the registry and htpasswd, ip, ping
  debootstrap --include=linux-image-amd64,docker.io,containernetworking-plugins,iproute2,iptables,kmod,procps,busybox-static,iputils-ping,docker-registry,apache2-utils,ca-certificates \
    bookworm "$root" >"$VM/debootstrap.log" 2>&1 || { tail -20 "$VM/debootstrap.log"; exit 1; }
  touch "$root/.crishim-complete"
fi

# the node that runs the tests here runs them there (Debian bookworm's is too old)
node=$(readlink -f "$(command -v node)")
missing=$(ldd "$node" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  [ -e "$root$lib" ] || echo "$lib"
done)
[ -z "$missing" ] || { echo "build-vm: the VM lacks libraries node needs: $missing" >&2; exit 1; }
install -m 0755 "$node" "$root/usr/bin/node"
install -m 0755 "$HERE/vm-init.sh" "$root/sbin/crishim-vm-init"

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

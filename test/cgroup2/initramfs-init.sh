#!/bin/busybox sh
# shellcheck shell=dash
# The test VM's initramfs: load the root disk's drivers, mount it, hand over to vm-init.sh
# (or to the init= of the kernel command line: the kernel keeps that one from us).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r ko; do insmod "/lib/modules/$ko" 2>/dev/null; done </lib/modules/order
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 -o rw /dev/vda /newroot || { echo "initramfs: cannot mount /dev/vda"; poweroff -f; }
init=/sbin/crishim-vm-init
read -r cmdline </proc/cmdline
for arg in $cmdline; do
  case $arg in init=*) init=${arg#init=} ;; esac
done
for fs in dev sys proc; do mount --move "/$fs" "/newroot/$fs"; done
exec switch_root /newroot "$init"

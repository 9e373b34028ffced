#!/bin/bash
# Builds the images crishim needs on a machine that reaches no registry (idempotent):
#   $PAUSE_IMAGE (default registry.k8s.io/pause:3.10)  from images/pause/pause.c (gcc -static)
#   crishim-test/busybox:latest                          from Debian's busybox-static
# Needs gcc, busybox-static and a running dockerd.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
PAUSE_IMAGE=${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}
BUSYBOX_IMAGE=${BUSYBOX_IMAGE:-crishim-test/busybox:latest}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1; then
  mkdir -p "$work/pause"
  gcc -static -Os -s -o "$work/pause/pause" "$HERE/images/pause/pause.c"
  tar -C "$work/pause" --numeric-owner --owner=0 --group=0 -cf - pause |
    docker import --change 'ENTRYPOINT ["/pause"]' --change 'USER 65535:65535' - "$PAUSE_IMAGE" >/dev/null
  echo "built $PAUSE_IMAGE"
fi

if ! docker image inspect "$BUSYBOX_IMAGE" >/dev/null 2>&1; then
  root=$work/busybox
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/proc" "$root/sys" "$root/dev"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  chmod 1777 "$root/tmp"
  tar -C "$root" --numeric-owner --owner=0 --group=0 -cf - . |
    docker import --change 'ENV PATH=/bin' --change 'CMD ["sh"]' - "$BUSYBOX_IMAGE" >/dev/null
  echo "built $BUSYBOX_IMAGE"
fi

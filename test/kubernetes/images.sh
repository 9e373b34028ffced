#!/bin/bash
# Usage: test/kubernetes/images.sh [--rebuild] BIN_DIR
# Builds into the local Docker Engine, with no registry, the images a kubeadm cluster on
# crishim and the e2e [NodeConformance] specs (test/e2e/common/{node,storage,network}) of a v1.26
# or v1.28 e2e.test use (each names its own tags of busybox, agnhost and etcd: both are built).
# Skips images already present unless --rebuild. BIN_DIR: static agnhost nnp kube-apiserver
# kube-controller-manager kube-scheduler [kube-proxy]. Host: busybox-static bash openssl etcd-server
# [etcd-client]. K8S_SRC (optional, a Kubernetes tree): source of agnhost's porter certs (else generated).
#
# e2e stand-ins; base = busybox-static applets, /bin/sh = sh-shim.c (busybox ash, but a lone simple
# command runs with env vars named like a-b kept; agnhost's /bin/sh is bash), curl and nc shims in
# /usr/bin, Debian bash, user-defined-in-image(1000)/group-defined-in-image:
#   e2e-test-images/busybox:1.29-4, :1.29-2, :1.36.1-1   base, CMD sh
#   e2e-test-images/agnhost:2.43, :2.45       base + /agnhost, ENTRYPOINT /agnhost, CMD pause
#   e2e-test-images/{nginx:1.14-4,nginx:1.15-4,httpd:2.4.38-4,httpd:2.4.39-4}  agnhost test-webserver :80
#   e2e-test-images/nonroot:1.4 (USER 1234), e2e-test-images/nonewprivs:1.3 (setuid-root nnp)
#   pause:3.9 = tag of crishim's pause:3.10; etcd:3.5.6-0, :3.5.9-0 (GRPC liveness probe specs, below)
# kubeadm: kube-{apiserver,controller-manager,scheduler,proxy}:<the version kube-apiserver --version
#   prints> (binary in /usr/local/bin; kube-proxy only if BIN_DIR has it, and it has no iptables:
#   skip phase addon/kube-proxy), etcd:3.5.6-0 (kubeadm 1.26), :3.5.9-0 (1.28) = Debian's etcd 3.4
#   (+etcdctl), pause:3.9. CoreDNS is not built: skip phase addon/coredns.
# Not built on purpose (imageutils names in test/e2e/common):
#   InvalidRegistryImage, AuthenticatedAlpine: specs expect a pull failure or need a private
#     registry; must stay absent. AuthenticatedWindowsNanoServer: Windows only.
#   IpcUtils, VolumeNFSServer, VolumeGlusterServer: only in PrePulledImages (don't pass
#     --prepull-images). Kitten, Nautilus, Redis: only kubectl/examples templates.
#   "should be able to pull image" uses imagePullPolicy Always on agnhost: needs a registry.
set -euo pipefail
usage() { echo "usage: $0 [--rebuild] BIN_DIR" >&2; exit 2; }
rebuild='' BIN_DIR=''
for a in "$@"; do
  case $a in
    --rebuild) rebuild=1 ;;
    -*) usage ;;
    *) [ -z "$BIN_DIR" ] || usage; BIN_DIR=$a ;;
  esac
done
[ -n "$BIN_DIR" ] || usage
[ -d "$BIN_DIR" ] || { echo "error: BIN_DIR $BIN_DIR is not a directory" >&2; exit 1; }
BIN_DIR=$(cd "$BIN_DIR" && pwd)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
K8S_SRC=${K8S_SRC:-}
E2E=registry.k8s.io/e2e-test-images
PATH_ENV='ENV PATH=/usr/local/bin:/usr/bin:/bin'

missing=
for b in agnhost nnp kube-apiserver kube-controller-manager kube-scheduler; do
  [ -x "$BIN_DIR/$b" ] || missing="$missing $b"
done
[ -z "$missing" ] || { echo "error: $BIN_DIR lacks:$missing" >&2; exit 1; }
for f in /bin/busybox /bin/bash /usr/bin/etcd; do
  [ -x "$f" ] || { echo "error: host lacks $f (apt-get install busybox-static bash etcd-server)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

want() { [ -n "$rebuild" ] || ! docker image inspect "$1" >/dev/null 2>&1; }
# image ROOTFS TAG [docker import options]: unless TAG is present, fill $work/ROOTFS once (with
# mk_ROOTFS, else mk_control_plane for binary ROOTFS), tar it and import it as TAG.
image() {
  local rootfs=$1 tag=$2; shift 2
  want "$tag" || return 0
  if [ ! -f "$work/$rootfs.tar" ]; then
    mkdir -p "$work/$rootfs"
    if declare -F "mk_$rootfs" >/dev/null; then "mk_$rootfs" "$work/$rootfs"
    else mk_control_plane "$work/$rootfs" "$rootfs"; fi
    tar -C "$work/$rootfs" --numeric-owner --owner=0 --group=0 -cf "$work/$rootfs.tar" .
  fi
  docker import --change "$PATH_ENV" "$@" "$work/$rootfs.tar" "$tag" >/dev/null
  echo "built $tag"
}
# copy_bin ROOT SRC DEST: SRC to ROOT/DEST plus the shared libraries ldd lists, at the same paths.
copy_bin() {
  local lib
  install -D -m 0755 "$2" "$1$3"
  for lib in $(ldd "$2" 2>/dev/null | grep -o '/[^ ]*' || true); do
    [ -e "$1$lib" ] || install -D -m 0755 "$lib" "$1$lib"
  done
}
# skeleton ROOT: /etc/passwd, /etc/group, /tmp and the usual mount points.
skeleton() {
  mkdir -p "$1"/{etc,tmp,root,proc,sys,dev,usr/bin,usr/local/bin}
  chmod 1777 "$1/tmp"
  printf '%s\n' root:x:0:0:root:/root:/bin/sh nobody:x:65534:65534:nobody:/:/bin/false \
    user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh > "$1/etc/passwd"
  printf '%s\n' root:x:0: nogroup:x:65534: user-defined-in-image:x:1000: \
    group-defined-in-image:x:50000:user-defined-in-image > "$1/etc/group"
  echo 'hosts: files dns' > "$1/etc/nsswitch.conf"
}
mk_control_plane() { skeleton "$1"; install -m 0755 "$BIN_DIR/$2" "$1/usr/local/bin/$2"; }

mk_base() {
  skeleton "$1"
  mkdir -p "$1/bin" "$1/home/user-defined-in-image"
  cp /bin/busybox "$1/bin/busybox"
  for applet in $(/bin/busybox --list); do
    case $applet in busybox|sh|bash) ;; *) ln -s busybox "$1/bin/$applet" ;; esac
  done
  copy_bin "$1" /bin/bash /bin/bash   # for the nc stand-in below
  # ash, but `sh -c "<simple command>"` execs it with the environment whole (sh-shim.c)
  gcc -static -Os -s -o "$1/bin/sh" "$REPO/test/kubernetes/sh-shim.c"
  ln -s ../../bin/busybox "$1/usr/bin/env"
  cat > "$1/usr/bin/curl" <<'EOF'
#!/bin/sh
# curl stand-in: GET one URL with busybox wget. Honours -o FILE, -w '%{http_code}', -f, -s, -m SEC;
# ignores other options. Exits like curl: 7 no connection, 22 HTTP error with -f, 28 timeout.
out=- fmt='' max='' fail='' silent='' url=''
while [ $# -gt 0 ]; do
  case $1 in
    -o|--output) out=$2; shift ;;
    -w|--write-out) fmt=$2; shift ;;
    -m|--max-time) max=${2%.*}; shift ;;
    --connect-timeout|-X|--request|-H|--header|-A|--user-agent|--retry|-u|--user|-e) shift ;;
    --fail) fail=1 ;;
    --silent) silent=1 ;;
    --*) ;;
    -*) case $1 in *s*) silent=1 ;; esac; case $1 in *f*) fail=1 ;; esac ;;
    *) url=$1 ;;
  esac
  shift
done
[ -n "$url" ] || { echo "curl: no URL specified" >&2; exit 2; }
if [ -n "$max" ]; then set -- timeout "$max"; else set --; fi
exec 3>&1   # the body goes to our stdout; wget's stderr (-S headers, errors) is captured
log=$("$@" wget -q -S -O "$out" "$url" 2>&1 1>&3 3>&-; echo "rc=$?")
code=$(printf '%s\n' "$log" | sed -n 's|^ *HTTP/[0-9.]* \([0-9][0-9]*\).*|\1|p' | tail -n 1)
[ -z "$fmt" ] || printf '%b' "$(printf '%s' "$fmt" | sed "s/%{http_code}/${code:-000}/g")"
if [ -z "$code" ]; then
  [ -n "$silent" ] || printf '%s\n' "$log" | grep -v '^rc=' >&2
  case ${log##*rc=} in 124|143) exit 28 ;; *) exit 7 ;; esac
fi
if [ -n "$fail" ] && [ "$code" -ge 400 ]; then exit 22; fi
exit 0
EOF
  cat > "$1/usr/bin/nc" <<'EOF'
#!/bin/bash
# nc stand-in: busybox nc, plus -u (send stdin as one UDP datagram, print the reply within -w SEC).
udp='' w=1 args=() pos=()
while [ $# -gt 0 ]; do
  case $1 in
    -u) udp=1 ;;
    -w) w=$2; args+=(-w "$2"); shift ;;
    -*) args+=("$1") ;;
    *) args+=("$1"); pos+=("$1") ;;
  esac
  shift
done
[ -n "$udp" ] || exec /bin/busybox nc "${args[@]}"
[ ${#pos[@]} -eq 2 ] || { echo "nc: -u needs HOST PORT" >&2; exit 1; }
exec 3<>"/dev/udp/${pos[0]}/${pos[1]}" || exit 1
cat >&3
timeout "$w" dd bs=65536 count=1 <&3 2>/dev/null
exit 0
EOF
  chmod 0755 "$1/usr/bin/curl" "$1/usr/bin/nc"
}
mk_nnp() {
  mk_base "$1"
  install -m 4755 "$BIN_DIR/nnp" "$1/usr/local/bin/nnp"   # setuid root: owner is 0 in the tar
}
mk_agnhost() {
  local porter=$K8S_SRC/test/images/agnhost/porter
  mk_base "$1"
  # bash as sh: busybox ash runs its own applets before PATH, so `nc -u` would never reach the nc
  # stand-in (the real agnhost has netcat-openbsd); no agnhost spec reads ash's messages
  ln -sf bash "$1/bin/sh"
  mkdir -p "$1/uploads"
  install -m 0755 "$BIN_DIR/agnhost" "$1/agnhost"
  ln -s agnhost "$1/agnhost-2"
  if [ -f "$porter/localhost.crt" ] && [ -f "$porter/localhost.key" ]; then
    cp "$porter/localhost.crt" "$porter/localhost.key" "$1/"
  else
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=localhost \
      -keyout "$1/localhost.key" -out "$1/localhost.crt" 2>/dev/null
  fi
}
mk_etcd() {   # Debian's etcd is 3.4: it accepts every flag kubeadm v1.26 and v1.28 pass (phases/etcd/local.go)
  skeleton "$1"
  mkdir -p "$1/var/lib/etcd"
  copy_bin "$1" /usr/bin/etcd /usr/local/bin/etcd
  if [ -x /usr/bin/etcdctl ]; then copy_bin "$1" /usr/bin/etcdctl /usr/local/bin/etcdctl
  else echo "note: host has no etcdctl (apt-get install etcd-client): etcd image built without it"; fi
}

# A: e2e stand-ins.
for tag in 1.29-4 1.29-2 1.36.1-1; do image base "$E2E/busybox:$tag" --change 'CMD ["sh"]'; done
image base "$E2E/nonroot:1.4" --change 'USER 1234' --change 'CMD ["sh"]'
image nnp "$E2E/nonewprivs:1.3" --change 'CMD ["nnp"]'
for tag in 2.43 2.45; do
  image agnhost "$E2E/agnhost:$tag" --change 'EXPOSE 80 8080 8081 9376 5000' \
    --change 'ENTRYPOINT ["/agnhost"]' --change 'CMD ["pause"]'
done
for tag in nginx:1.14-4 nginx:1.15-4 httpd:2.4.38-4 httpd:2.4.39-4; do
  image agnhost "$E2E/$tag" --change 'EXPOSE 80' --change 'ENTRYPOINT ["/agnhost","test-webserver"]'
done
if want registry.k8s.io/pause:3.9; then
  docker image inspect registry.k8s.io/pause:3.10 >/dev/null 2>&1 || "$REPO/scripts/build-images.sh"
  docker tag registry.k8s.io/pause:3.10 registry.k8s.io/pause:3.9
  echo "built registry.k8s.io/pause:3.9 (tag of registry.k8s.io/pause:3.10)"
fi

# B: kubeadm's control-plane images (and etcd, pause:3.9), tagged as the binaries' version:
# kubeadm.test.ts asks kubeadm for its own version, which comes from the same tree.
version=$("$BIN_DIR/kube-apiserver" --version | sed -n 's/^Kubernetes \(v[0-9][^ ]*\)$/\1/p')
[ -n "$version" ] || { echo "error: $BIN_DIR/kube-apiserver --version names no version" >&2; exit 1; }
for name in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  if [ -x "$BIN_DIR/$name" ]; then
    image "$name" "registry.k8s.io/$name:$version"
  elif want "registry.k8s.io/$name:$version"; then
    echo "skipped registry.k8s.io/$name:$version: no $BIN_DIR/$name (skip kubeadm phase addon/$name)"
  fi
done
for tag in 3.5.6-0 3.5.9-0; do image etcd "registry.k8s.io/etcd:$tag" --change 'CMD ["/usr/local/bin/etcd"]'; done

#!/bin/bash
# Prepares a bare Debian machine (root) to run crishim and its tests, idempotently:
# Docker Engine, CNI plugins, the tools tests use (python3: the package test's
# NOTIFY_SOCKET listener; dpkg-deb comes with dpkg), a running dockerd, the default
# CNI config when /etc/cni/net.d has none, and the locally built images.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)

# dpkg -s, not `command -v`: a docker client alone (as some images ship) is not an engine
need_pkgs=()
for pkg in docker.io containernetworking-plugins busybox-static gcc libc6-dev iproute2 iptables \
           util-linux iputils-ping docker-registry systemd apache2-utils python3; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_pkgs+=("$pkg")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "setup-host: installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if ! docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  echo "setup-host: starting dockerd"
  mkdir -p /var/log
  nohup setsid dockerd >/var/log/crishim-dockerd.log 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    docker version --format '{{.Server.Version}}' >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker version --format 'setup-host: dockerd {{.Server.Version}} answers' || { tail -20 /var/log/crishim-dockerd.log; exit 1; }
fi

mkdir -p /etc/cni/net.d
if ! ls /etc/cni/net.d/*.conf /etc/cni/net.d/*.conflist /etc/cni/net.d/*.json >/dev/null 2>&1; then
  cp "$HERE/cni/10-crishim.conflist" /etc/cni/net.d/
  echo "setup-host: installed the default CNI config in /etc/cni/net.d"
fi

bash "$HERE/scripts/build-images.sh"

#!/bin/bash
# npm run test:cgroup2: the e2e suites whose answers depend on the host's cgroups and
# capabilities, run again inside a VM booted with cgroup v2 only (build-vm.sh makes it on
# first use; run-in-vm.sh boots it). Needs what npm test needs, after scripts/setup-host.sh.
# Extra arguments go to jest (e.g. -t 'a test name'). It boots the VM twice, once per cgroup
# driver of Docker (run-in-vm.sh): cgroupfs, and systemd as most nodes run it, where a pod's
# cgroup parent takes another form; CRISHIM_VM_CGROUP_DRIVER=cgroupfs or systemd runs one.
set -euo pipefail
cd "$(dirname "$0")/../.."
# stats read the cgroup files; resources write them; conformance and sandbox see what
# a host that grants Docker's Privileged mode gives (this machine does not)
suites='test/e2e/(stats|stats-pod|resources|conformance|sandbox)\.test\.ts'
npm run -s build
bash test/cgroup2/build-vm.sh
images=$(mktemp)
trap 'rm -f "$images"' EXIT
docker save crishim-test/busybox:latest "${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}" -o "$images"
extra=''
[ $# -eq 0 ] || extra=$(printf ' %q' "$@")
failed=()
suite() {
  CRISHIM_VM_CGROUP_DRIVER=$1 CRISHIM_VM_IMAGES=$images bash test/cgroup2/run-in-vm.sh "$PWD" \
    "node node_modules/jest/bin/jest.js --runInBand --selectProjects e2e --testPathPattern '$suites'$extra"
}
for driver in ${CRISHIM_VM_CGROUP_DRIVER:-cgroupfs systemd}; do
  echo "test:cgroup2: Docker's $driver cgroup driver"
  rc=0 && suite "$driver" || rc=$?
  # 126: the guest as a whole stopped, vm-init's heartbeat loop with it (run-in-vm.sh), which a
  # hung test does not do: boot once more, and say so
  if [ "$rc" = 126 ]; then
    echo "test:cgroup2: the VM froze; running the $driver suites once more"
    rc=0 && suite "$driver" || rc=$?
  fi
  [ "$rc" = 0 ] || failed+=("$driver")
done
[ ${#failed[@]} -eq 0 ] || { echo "test:cgroup2: failed with the ${failed[*]} driver" >&2; exit 1; }

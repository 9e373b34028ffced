#!/bin/bash
# npm run test:kubernetes: a single-node Kubernetes cluster on crishim, its workloads and
# Kubernetes' own [NodeConformance] e2e specs, kubeadm init and reset. Needs root, dockerd, Debian's
# etcd-server and KUBE_BIN_DIR: a folder of Kubernetes binaries (kubelet, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, kubeadm, e2e.test, ginkgo, agnhost, nnp) built
# from a Kubernetes tree, and cri-tools' crictl.
# KUBE_RUNTIME=containerd runs the same tests with containerd's CRI as the kubelet's runtime.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${KUBE_BIN_DIR:-}" ]; then
  echo "test:kubernetes: KUBE_BIN_DIR is not set; see docs/kubernetes.md, \"Running a cluster on crishim\"" >&2
  exit 2
fi
npm run -s build || exit 1
bash test/kubernetes/images.sh "$KUBE_BIN_DIR" || exit 1
out=$(mktemp)
npx jest --runInBand --forceExit --selectProjects kubernetes --json --outputFile="$out" "$@"
rc=$?
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(`kubernetes: ${r.numPassedTests} passed, ${r.numFailedTests} failed`)' "$out" || true
rm -f "$out"
exit $rc

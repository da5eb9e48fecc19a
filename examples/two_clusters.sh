#!/usr/bin/env bash
# Walk-through: minikcp and two simulated physical clusters; a Deployment of 5 replicas is split
# 3/2 across them and rolls out. Run from a checkout with minikcp installed (pip install -e .):
#
#     ./examples/two_clusters.sh
#
# Everything lives in a temporary directory and stops when the script ends. Ports: $PORT_BASE
# (default 17443) for minikcp, +1 and +2 for the clusters "east" and "west".
set -euo pipefail

MINIKCP=${MINIKCP:-"python -m minikcp.cli.main"}
PORT_BASE=${PORT_BASE:-17443}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

start() {  # start NAME PORT [ARGS...]
    local name=$1 port=$2
    shift 2
    $MINIKCP start --root-dir "$WORK/$name" --secure-port "$port" "$@" >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    until kubectl --kubeconfig "$WORK/$name/admin.kubeconfig" get --raw /readyz >/dev/null 2>&1; do
        sleep 0.2
    done
    echo "started $name on port $port"
}

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

# minikcp, and two servers that act as physical clusters: Deployments there get ReplicaSets
# and Pods, which become Ready 3 seconds after they start.
start kcp "$PORT_BASE"
start east $((PORT_BASE + 1)) --simulate-workloads --rollout-delay 3
start west $((PORT_BASE + 2)) --simulate-workloads --rollout-delay 3

# Attach both: a kubeconfig Secret and a SyncTarget each, created through minikcp's API.
for name in east west; do
    step $MINIKCP attach "$name" --kubeconfig "$WORK/$name/admin.kubeconfig" --context root \
        --labels "cluster=$name" --root-dir "$WORK/kcp"
done

export KUBECONFIG=$WORK/kcp/admin.kubeconfig
step kubectl wait --for=condition=Ready synctarget/east synctarget/west --timeout=60s
step kubectl get synctargets -o wide

# A Deployment in the root logical cluster: 3 replicas go to east, 2 to west.
step kubectl create deployment web --image=nginx --replicas=5
step kubectl rollout status deployment/web --timeout=120s
step kubectl get deployment web \
    -o jsonpath='{.metadata.annotations.workload\.minikcp\.io/replica-split}{"\n"}'
step kubectl get deployment web

for name in east west; do
    echo
    echo "--- physical cluster $name (namespace kcp-<hash> holds logical cluster root, namespace default)"
    step kubectl --kubeconfig "$WORK/$name/admin.kubeconfig" get deployments,pods -A \
        -l app=web
done

# Scale: only the difference moves (east 4, west 3).
step kubectl scale deployment/web --replicas=7
step kubectl rollout status deployment/web --timeout=120s
step kubectl get deployment web \
    -o jsonpath='{.metadata.annotations.workload\.minikcp\.io/replica-split}{"\n"}'

# Detach west: its copy is removed and east takes every replica.
step $MINIKCP detach west --root-dir "$WORK/kcp"
step kubectl rollout status deployment/web --timeout=120s
step kubectl get deployment web \
    -o jsonpath='{.metadata.annotations.workload\.minikcp\.io/replica-split}{"\n"}'

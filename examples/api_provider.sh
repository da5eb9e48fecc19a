#!/usr/bin/env bash
# Walk-through: a provider exports widgets and claims configmaps; two consumers bind the export
# (one accepts the claim); a controller on the export's virtual workspace reconciles the widgets
# of both. Run from a checkout with minikcp's requirements installed:
#
#     ./examples/api_provider.sh
#
# Everything lives in a temporary directory and stops when the script ends. Port: $PORT
# (default 17453).
set -euo pipefail

cd "$(dirname "$0")/.."
MINIKCP=${MINIKCP:-"python -m minikcp.cli.main"}
KUBECTL_WS=${KUBECTL_WS:-"python -m minikcp.cli.ws"}
KUBECTL_KCP=${KUBECTL_KCP:-"python -m minikcp.cli.kcp_plugin"}
PORT=${PORT:-17453}
WORK=$(mktemp -d)
PID=
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

$MINIKCP start --root-dir "$WORK/kcp" --secure-port "$PORT" >"$WORK/kcp.log" 2>&1 &
PID=$!
until kubectl --kubeconfig "$WORK/kcp/admin.kubeconfig" get --raw /readyz >/dev/null 2>&1; do
    sleep 0.2
done
# kubectl ws keeps the current workspace in this copy of the admin kubeconfig.
cp "$WORK/kcp/admin.kubeconfig" "$WORK/kubeconfig"
export KUBECONFIG=$WORK/kubeconfig

# The provider: a schema, and an export of it that claims the consumers' configmaps.
step $KUBECTL_WS create provider --enter
kubectl apply -f - <<EOF
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.widgets.example.kcp.io}
spec:
  group: example.kcp.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      type: object
      properties:
        spec: {type: object, properties: {size: {type: integer, default: 1}}}
        status: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: example.kcp.io}
spec:
  latestResourceSchemas: [v1.widgets.example.kcp.io]
  permissionClaims:
  - {group: "", resource: configmaps, all: true}
EOF
until [ -n "$(kubectl get apiexportendpointslice example.kcp.io \
        -o jsonpath='{.status.endpoints[0].url}' 2>/dev/null)" ]; do
    sleep 0.2
done
URL=$(kubectl get apiexportendpointslice example.kcp.io -o jsonpath='{.status.endpoints[0].url}')
echo "the export's virtual workspace: $URL"

# Two consumers: c1 accepts the configmaps claim, c2 does not.
step $KUBECTL_WS use :root
step $KUBECTL_WS create c1 --enter
step $KUBECTL_KCP bind apiexport root:provider:example.kcp.io \
    --accept-permission-claim configmaps.core
kubectl create configmap settings --from-literal=color=blue
printf 'apiVersion: example.kcp.io/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n' |
    kubectl apply -f -
step $KUBECTL_WS use :root
step $KUBECTL_WS create c2 --enter
step $KUBECTL_KCP bind apiexport root:provider:example.kcp.io
kubectl create configmap private --from-literal=secret=yes
printf 'apiVersion: example.kcp.io/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {size: 5}\n' |
    kubectl apply -f -

# The provider's controller: list+watch on <url>/clusters/*, status written in each consumer.
step python examples/widget_controller.py --kubeconfig "$WORK/kcp/admin.kubeconfig" \
    --url "$URL" --count 2

# kubectl on the virtual workspace: the widgets of both consumers, the claimed configmaps of c1
# only (c2 did not accept the claim), each with the logical cluster it lives in.
cluster_column='-o=custom-columns=CLUSTER:.metadata.annotations.kcp\.io/cluster,NAME:.metadata.name'
step kubectl --server "$URL/clusters/*" get widgets -A "$cluster_column,STATUS:.status.phase"
step kubectl --server "$URL/clusters/*" get configmaps -A "$cluster_column"
step kubectl --server "$URL/clusters/*" api-resources

# In the consumers the status written by the provider's controller is there.
step kubectl get widget w2 -o jsonpath='{.status}{"\n"}'
step $KUBECTL_WS use :root:c1
step kubectl get widget w1 -o jsonpath='{.status}{"\n"}'

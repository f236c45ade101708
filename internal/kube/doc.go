// Package kube renders the Kubernetes manifests of a sandboxd session: one
// pod whose agent container holds no privilege, beside an init container
// that installs the agent uid's network rules (sandboxd netinit) and a
// native sidecar that serves the proxy, the DNS proxy, the capture and the
// hook ruling server (sandboxd proxy --sidecar); and a ConfigMap, a
// ServiceAccount and a NetworkPolicy for it. Render makes a new workload;
// Inject adds the same parts to a user's Pod, Deployment, StatefulSet or
// Job, and refuses one it cannot make safe.
//
// It is manifests only: the runtime half (netinit, the sidecar) reads the
// ports, paths, uids and flags in contract.go, which both halves share.
// Only cmd/sandboxd imports it (hookgate must not link k8s.io).
package kube

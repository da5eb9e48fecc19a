"""The simulation of a physical cluster (`minikcp start --simulate-workloads`).

It plays the workload controllers and the kubelets: ReplicaSets and Pods for Deployments,
StatefulSets, DaemonSets, Jobs and CronJobs, rollouts, pod lifecycles and their conditions. It
runs only when asked for; nothing in minikcp depends on it. Like the controllers it calls the
registry in-process.
"""

"""An EKS cluster the platform creates (`cluster.create`), and its VPC unless it is given
subnets.

Two steps, as `GpuPlatform` needs them. `plan_new_cluster` runs before anything is created,
with lookups only: the cluster as it will be (name, region, account, Kubernetes version), the
zones of its new VPC, and its node subnets, so that the GPU pools are resolved against it as
against an existing cluster. `NewEksCluster` then creates it under the platform's component:
network, control plane, access entries, add-ons and the system node group. `ready` is what the
Kubernetes provider waits for, so that every Kubernetes object depends on the cluster and its
system nodes and `pulumi destroy` removes them first.

Module layout: `cluster` (the two steps), `network` (VPC) and `layout` (where its subnets and
NAT gateways go), `control_plane` (role, KMS key, log group, cluster, access entries), `addons`
and `addon_pins` (pinned add-ons, `addon_versions.json`, `derive.py`), `system_nodes`,
`auto_mode` (EKS Auto Mode turned on in their place). This package imports nothing itself, so
that `gpu-platform preflight` reads `layout` and `addon_pins` without loading Pulumi.
"""

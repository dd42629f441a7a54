"""The stack settings whose change replaces a GKE node pool, and its nodes, instead of updating
it: each sets a node pool input that the provider cannot change on an existing pool (`ForceNew`
in terraform-provider-google, which pulumi-gcp bridges: `google/services/container/
node_config.go` for `nodeConfig`, `resource_container_node_pool.go` for the pool). `pulumi
preview` shows such a change as a replacement; the offline plan lists the settings, and
docs/gke-capacity.md says what a replacement does to running jobs."""

from collections.abc import Mapping

REPLACING_SETTINGS: Mapping[str, str] = {
    # A machine type brings its GPUs: `guest_accelerator` `type` and `count` are ForceNew.
    "pools[].instanceTypes": "nodeConfig.guestAccelerators",
    "pools[].accelerator": "nodeConfig.guestAccelerators",
    "pools[].gpusPerNode": "nodeConfig.guestAccelerators",
    # On COS, GKE shares and partitions the GPUs: `gpu_sharing_config` (strategy and
    # `max_shared_clients_per_gpu`) and `gpu_partition_size` are ForceNew.
    "pools[].sharing": "nodeConfig.guestAccelerators",
    "pools[].capacity": "nodeConfig.spot",
    "pools[].gcp.reservation": "nodeConfig.reservationAffinity",
    "pools[].gcp.reservationName": "nodeConfig.reservationAffinity",
    "pools[].gcp.flexStart": "nodeConfig.flexStart",
    "pools[].gcp.maxRunHours": "nodeConfig.maxRunDuration",
    "pools[].gcp.queuedProvisioning": "queuedProvisioning",
    "pools[].gcp.serviceAccount": "nodeConfig.serviceAccount",
    # COS nodes boot with secure boot, Ubuntu's (whose driver the operator builds) without:
    # `shielded_instance_config` is ForceNew.
    "cluster.nodeImage": "nodeConfig.shieldedInstanceConfig",
}
"""A setting (as the stack file spells it) -> the node pool input it sets that replaces the
pool when it changes."""

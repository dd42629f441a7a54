"""`AutoModeGpuNodePool`: one GPU pool as a NodePool of EKS Auto Mode and the NodeClass it
launches nodes with.

The NodePool is the Karpenter one (`gpu_platform.eks.karpenter.node_pool`): the same node
identity, limits, weight and disruption settings; Auto Mode runs Karpenter's `karpenter.sh/v1`
NodePool API itself. What differs is Auto Mode's: its NodeClass kind, the labels it chooses
sizes by (`eks.amazonaws.com/instance-*` for Karpenter's `karpenter.k8s.aws/instance-*`), and
the nodes' lifetime. Auto Mode chooses the AMI, Bottlerocket-based, with the NVIDIA driver and
device plugin in it, and replaces it through drift, and it watches and repairs its nodes
itself: nothing of that is the pool's to set.

Upstream sources are the EKS user guide's Auto Mode pages (awsdocs/amazon-eks-user-guide,
`latest/ug/automode/`).
"""

from typing import Any

import pulumi

from gpu_platform.eks.auto_mode.names import (
    AUTO_MODE_LABEL_PREFIX,
    NODE_CLASS_API_VERSION,
    NODE_CLASS_GROUP,
    NODE_CLASS_KIND,
)
from gpu_platform.eks.karpenter.labels import InstanceLabels
from gpu_platform.eks.karpenter.node_pool import (
    KarpenterGpuNodePoolArgs,
    NodePoolShape,
    custom_resource,
    node_pool_for,
    node_pool_resource,
    one_of,
)
from gpu_platform.node_identity import POOL_LABEL

GPU_MANUFACTURER_LABEL = f"{AUTO_MODE_LABEL_PREFIX}instance-gpu-manufacturer"
NODE_CLASS_SCHEMA = ("eks-auto-mode", "docs")
"""Where the NodeClass's schema is committed (`crd_schemas.schema_file`'s chart and version): by
hand, from the EKS user guide, as AWS publishes no CRD for it (crd_schemas/__init__.py)."""

AUTO_MODE_SHAPE = NodePoolShape(
    NODE_CLASS_GROUP,
    NODE_CLASS_KIND,
    InstanceLabels(
        f"{AUTO_MODE_LABEL_PREFIX}instance-family",
        f"{AUTO_MODE_LABEL_PREFIX}instance-category",
        f"{AUTO_MODE_LABEL_PREFIX}instance-gpu-name",
    ),
    # Auto Mode replaces every node within 21 days, however long `expireAfter` (automode.adoc,
    # "nodes launched by EKS Auto Mode have a maximum lifetime of 21 days (which you can
    # reduce)"; 336h by default, create-node-pool.adoc, "Disruption"): the longest it allows,
    # so that a node is drained, within `terminationGracePeriod`, as seldom as it can be.
    "504h",
    # AWS replaces Auto Mode's AMI "frequently, sometimes once per week", drifting every node
    # (AWS re:Post, "EKS Auto Mode and maintenance window for drifted nodes").
    drifts_by_itself=True,
)


class AutoModeGpuNodePool(pulumi.ComponentResource):
    """A NodePool and its NodeClass for one GPU pool on EKS Auto Mode. The caller's options carry
    the Kubernetes provider."""

    def __init__(
        self, name: str, args: KarpenterGpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:eks:AutoModeGpuNodePool", name, None, opts)
        self.node_class = custom_resource(
            name,
            node_class_for(args),
            pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        # Deleted before its node class, which Auto Mode's Karpenter holds while NodeClaims use
        # it, as Karpenter does an EC2NodeClass.
        self.node_pool = node_pool_resource(
            name, auto_mode_node_pool_for(args), self.node_class, args, self
        )
        self.register_outputs({"node_pool_name": name, "node_class_name": name})


def auto_mode_node_pool_for(args: KarpenterGpuNodePoolArgs) -> dict[str, Any]:
    """The pool's NodePool, on NVIDIA GPUs only: a size chosen by family or category is of the
    pool's GPU model already, and the manufacturer says so to whoever reads the NodePool."""
    node_pool = node_pool_for(args, AUTO_MODE_SHAPE)
    node_pool["spec"]["template"]["spec"]["requirements"].append(
        one_of(GPU_MANUFACTURER_LABEL, ["nvidia"])
    )
    return node_pool


def node_class_for(args: KarpenterGpuNodePoolArgs) -> dict[str, Any]:
    """The pool's NodeClass. Every pool gets its own rather than Auto Mode's built-in `default`:
    that exists only while the cluster's built-in node pools are on (create-node-pool.adoc,
    "Cluster without built-in node pools"), and gives nodes 80 GiB of ephemeral storage
    (create-node-class.adoc), below any pool's disk; and a reservation is selected by a
    NodeClass only (auto-odcr.adoc)."""
    spec = args.pool.spec
    node_class: dict[str, Any] = {
        # The cluster's Auto Mode node role, for which EKS created the access entry with the
        # cluster; a NodeClass of another role would need its own (create-node-class.adoc,
        # "Create node class access entry").
        "role": args.node_role_name,
        "subnetSelectorTerms": [{"id": subnet} for subnet in args.placement.subnet_ids],
        "securityGroupSelectorTerms": [{"id": args.cluster.security_group_id}],
        "ephemeralStorage": {
            "size": f"{spec.disk_size_gib}Gi",
            "iops": spec.aws.volume_iops,
            "throughput": spec.aws.volume_throughput_mibps,
        },
        # No `tags`: AmazonEKSComputePolicy lets the cluster role launch instances and
        # launch templates only with Auto Mode's own tag keys (`eks:eks-cluster-name`,
        # `eks:kubernetes-node-class-name`, `eks:kubernetes-node-pool-name`,
        # `kubernetes.io/cluster/*`), so a NodeClass tag of any other key makes every launch
        # fail unless the cluster role also carries a custom-tag policy (auto-learn-iam.adoc,
        # "Custom AWS tags for EKS Auto resources"; create-node-class.adoc, Considerations).
        # The platform cannot know that of a role it did not create, and a missing tag costs
        # less than a pool that never launches: Auto Mode's own tags already name the
        # instances' cluster and pool (the NodePool is named after the pool).
    }
    reservation = spec.aws.capacity_reservation_id
    if reservation is not None:
        # A reserved or capacity-block pool's, as under Karpenter. Once any NodeClass of the
        # cluster selects a reservation, Auto Mode launches into no open one it is not given
        # (auto-odcr.adoc, the warning).
        node_class["capacityReservationSelectorTerms"] = [{"id": reservation}]
    return {
        "apiVersion": NODE_CLASS_API_VERSION,
        "kind": NODE_CLASS_KIND,
        # The pool's label tells preflight the NodeClass is the platform's, not another one of
        # the cluster named alike (gpu_platform/eks/preflight/karpenter.py).
        "metadata": {"name": spec.name, "labels": {POOL_LABEL: spec.name}},
        "spec": node_class,
    }

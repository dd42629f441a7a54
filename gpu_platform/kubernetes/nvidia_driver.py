"""The NVIDIA driver of each GKE Ubuntu pool: an NVIDIADriver resource of its own.

On GKE Ubuntu the GPU Operator builds the driver. With its NVIDIADriver CRD on
(`operator_values.driver_values_for`), the operator routes every GPU node to the one NVIDIADriver
whose `nodeSelector` it matches, builds that resource's driver version there, and rolls a new
version out over that resource's nodes alone, under its own upgrade policy (gpu-operator v26.7.0
internal/nvidiadriver/nvidiadriver.go, AssignOwners; controllers/upgrade_controller.go,
reconcileNVIDIADriverUpgrades). The platform gives each pool one, selecting its nodes by their
pool label: a canary pool's driver then moves without touching any other pool.

One per pool rather than one per driver version: a `nodeSelector` is a map of labels that must
all match (`labels.SelectorFromSet`), so one resource cannot select several pools by their pool
label, and a resource per version that selected nodes by their driver would hand nodes from one
resource to another whenever a version moved. Pool names are unique, so no node is selected
twice, which the operator would refuse for every NVIDIADriver of the cluster at once
(internal/validator/validator.go: a `ConflictingNodeSelector` condition, no rollout, no change of
node ownership until it is resolved).
"""

from collections.abc import Sequence
from typing import Any

from gpu_platform.config import (
    NVIDIA_DRIVER_OVERRIDES,
    OperatorSpec,
    Platform,
    pool_driver_version,
)
from gpu_platform.kubernetes.operator_values import extra_taints, taint_toleration
from gpu_platform.node_identity import POOL_LABEL, ResolvedPool

API_VERSION = "nvidia.com/v1alpha1"
KIND = "NVIDIADriver"

# The chart's driver image (values.yaml `driver.repository` and `driver.image`), which the chart
# hands to its own default NVIDIADriver only. An NVIDIADriver that names a version must name both
# (internal/image/image.go, ImagePath: repository, image and version together, or the image alone
# as a whole path, which is the CRD's default for `image`).
DRIVER_REPOSITORY = "nvcr.io/nvidia"
DRIVER_IMAGE = "driver"

# The Job controller labels every pod of a Job with it: the driver upgrade waits for those pods.
JOB_POD_LABEL = "batch.kubernetes.io/job-name"
# How long the upgrade tries to delete a node's GPU pods before it gives the node up as failed.
POD_DELETION_TIMEOUT_SECONDS = 300


def rolls_drivers_in_place(platform: Platform) -> bool:
    """Whether a new driver reaches a pool's running nodes after `pulumi up` has applied it: the
    GPU Operator's upgrade controller loads it node by node (GKE Ubuntu), where elsewhere a new
    driver comes with new nodes, which the pool's own update starts."""
    return platform is Platform.GKE_UBUNTU


def upgrade_hold_seconds(operator: OperatorSpec) -> int:
    """The longest the operator's upgrade keeps a node on its old driver once it has cordoned it,
    before it reloads the driver: it waits for the node's Jobs (`driverUpgradeJobWaitMinutes`;
    0, for ever, is refused where a gate waits), then deletes the GPU pods left."""
    return operator.driver_upgrade_job_wait_minutes * 60 + POD_DELETION_TIMEOUT_SECONDS


def nvidia_drivers_for(
    platform: Platform, operator: OperatorSpec, pools: Sequence[ResolvedPool]
) -> list[dict[str, Any]]:
    """The NVIDIADriver objects of a stack: one per pool where the operator builds the driver
    (GKE Ubuntu), none elsewhere."""
    if not rolls_drivers_in_place(platform):
        return []
    return [nvidia_driver_for(pool, operator) for pool in pools]


def nvidia_driver_for(pool: ResolvedPool, operator: OperatorSpec) -> dict[str, Any]:
    """The NVIDIADriver of one pool's nodes, named after the pool."""
    image = {
        key: value
        for key, value in operator.overrides.get("driver", {}).items()
        if key in NVIDIA_DRIVER_OVERRIDES
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": pool.spec.name},
        "spec": {
            # Required by the CRD. A `default` NVIDIADriver is the fallback for GPU nodes no
            # other selects, and may have no nodeSelector.
            "default": False,
            "driverType": "gpu",
            "repository": DRIVER_REPOSITORY,
            "image": DRIVER_IMAGE,
            **image,
            "version": pool_driver_version(operator, pool.spec),
            "nodeSelector": {POOL_LABEL: pool.spec.name},
            # The driver's DaemonSet always tolerates the GPU taint
            # (manifests/state-driver/0500_daemonset.yaml); the pool's other taints are added.
            "tolerations": [taint_toleration(taint) for taint in extra_taints([pool])],
            "upgradePolicy": upgrade_policy_for(operator),
        },
    }


def driver_image_path(driver: dict[str, Any]) -> str:
    """The image an NVIDIADriver names, before the operator adds the node's OS to its tag:
    `<repository>/<image>:<version>`, or `@<version>` for a digest (gpu-operator v26.7.0
    internal/image/image.go, ImagePath)."""
    spec = driver["spec"]
    separator = "@" if spec["version"].startswith("sha256:") else ":"
    return f"{spec['repository']}/{spec['image']}{separator}{spec['version']}"


def upgrade_policy_for(operator: OperatorSpec) -> dict[str, Any]:
    """How a new driver reaches a pool's nodes.

    The operator's upgrade controller moves one node of the pool at a time
    (`maxParallelUpgrades`), never more than the configured share of the pool's nodes (a
    percentage of the nodes the NVIDIADriver manages, rounded up); on each node it waits for
    running Jobs' pods to finish (`waitForCompletion`), then deletes the GPU pods left, without
    force, before it reloads the driver (api/nvidia/v1alpha1/nvidiadriver_types.go,
    DriverUpgradePolicySpec; the states a node passes through are on its
    `nvidia.com/gpu-driver-upgrade-state` label). Pools upgrade side by side, one node each.
    """
    return {
        "autoUpgrade": True,
        "maxParallelUpgrades": 1,
        "maxUnavailable": f"{operator.driver_upgrade_max_unavailable_percent}%",
        "waitForCompletion": {
            "podSelector": JOB_POD_LABEL,
            "timeoutSeconds": operator.driver_upgrade_job_wait_minutes * 60,
        },
        "podDeletion": {"force": False, "timeoutSeconds": POD_DELETION_TIMEOUT_SECONDS},
    }

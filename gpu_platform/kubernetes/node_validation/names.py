"""The names node validation shares: the taint a GPU node joins with until it has proven itself,
the labels its validator sets, and the service account that may set them.

The taint's key has the cluster autoscaler's startup-taint prefix (`StartupTaintPrefix`,
cluster-autoscaler utils/taints/taints.go; its FAQ "How can I scale a node group to 0?" and
"Startup taints"), so the autoscaler treats a node carrying it as one that is still starting,
not as a node that cannot take the pods it was scaled up for.
"""

from collections.abc import Mapping

from gpu_platform.node_identity import Taint

VALIDATION_TAINT = Taint(
    key="startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-validation",
    value="pending",
    effect="NoSchedule",
)

LABEL_PREFIX = "gpu-platform.io/"
RESULT_LABEL = f"{LABEL_PREFIX}validation"
"""`passed` or `failed`."""
FAILED_CHECK_LABEL = f"{LABEL_PREFIX}validation-failed-check"
"""The first check that failed (`gpu-count`, `ecc`, ...), on a node that failed."""
VALIDATED_DRIVER_LABEL = f"{LABEL_PREFIX}validated-driver"
"""The NVIDIA driver version the node passed with."""
VALIDATED_RELEASE_LABEL = f"{LABEL_PREFIX}validated-release"
"""The node image the node passed with: the AMI id or GKE node version."""
VALIDATION_LABELS = (
    RESULT_LABEL,
    FAILED_CHECK_LABEL,
    VALIDATED_DRIVER_LABEL,
    VALIDATED_RELEASE_LABEL,
)
"""Every label the validator may set, change or remove, and no other."""

VALIDATOR_SERVICE_ACCOUNT = "gpu-node-validator"

NVLINK_LINKS: Mapping[str, int] = {
    # NVIDIA A100 Tensor Core GPU Architecture whitepaper: twelve third-generation NVLink links
    # per A100 (SXM4), 600 GB/s in all.
    "a100-40gb": 12,
    "a100-80gb": 12,
    # NVIDIA H100 Tensor Core GPU Architecture whitepaper: eighteen fourth-generation NVLink
    # links per H100 SXM5, 900 GB/s in all; H200 SXM has the same NVLink (H200 datasheet,
    # 900 GB/s).
    "h100-80gb": 18,
    "h100-mega-80gb": 18,
    "h200-141gb": 18,
    # NVIDIA Blackwell architecture technical brief: eighteen fifth-generation NVLink links per
    # B200, 1.8 TB/s in all.
    "b200": 18,
    # NVIDIA Tesla V100 GPU Architecture whitepaper: six NVLink 2.0 links per V100 SXM2.
    "v100": 6,
}
"""Accelerator (gpu_platform/accelerators.py) -> the NVLink links `nvidia-smi nvlink --status`
reports active on each GPU of a node where the GPUs are NVLinked (the SXM boards of the
8-GPU instance and machine types); absent, or 0, for PCIe GPUs without NVLink."""

"""What a whole node of each accelerator shows the validator, beyond what the instance and machine
type data already give (GPU and EFA counts): the NVLink links of each GPU."""

from collections.abc import Mapping

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

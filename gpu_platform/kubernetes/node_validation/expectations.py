"""What a whole node of each accelerator shows the validator, beyond what the instance and machine
type data already give (GPU and EFA counts): the NVLink links of each GPU, and which GPUs the
NCCL test's image has kernels for."""

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

NCCL_TESTS_ACCELERATORS = frozenset(
    {"a30", "a100-40gb", "a100-80gb", "a10g", "l4", "l40s"}
    | {"h100-80gb", "h100-mega-80gb", "h200-141gb", "b200"}
)
"""The accelerators whose compute capability the NCCL test's image (versions.py
`NODE_VALIDATOR_NCCL_TESTS_IMAGE`) builds NCCL and nccl-tests for: `NVCC_GENCODE` sm_80 (A100,
A30), sm_86 (A10G), sm_89 (L4, L40S), sm_90 (H100, H200) and sm_100 (B200) in
aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/nccl-tests.Dockerfile; not
the T4 (sm_75), V100 (sm_70), P100 (sm_60) or P4 (sm_61), whose all-reduce would find no kernel."""

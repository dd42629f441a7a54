"""How long a new node of a pool may stay unvalidated at most: what anything that waits for a
validated node (the canary gate) must allow beyond the node's start.

The validator runs its tools one after another, each under its own timeout (`validate.py`), the
DCGM diagnostic and the NCCL test from images of their own, pulled when each starts: one
`nvidia-smi -q -x` that the GPU count, driver, ECC, memory and PCIe checks all read, `nvidia-smi
nvlink --status`, `dcgmi diag` at the pool's level, and on a node of several GPUs the NCCL
all-reduce test. A check the pool skips does not run; the five read from one `nvidia-smi` skip
it only all together.
"""

from collections.abc import Iterable

from gpu_platform.config.pools import GpuPoolSpec, PoolValidation
from gpu_platform.kubernetes.node_validation.validate import (
    DCGM_DIAG_TIMEOUT,
    NCCL_TIMEOUT,
    NVIDIA_SMI_TIMEOUT,
)

SMI_CHECKS = frozenset({"gpu-count", "driver", "ecc", "memory", "pcie"})
"""The checks that read the one `nvidia-smi -q -x` (`validate.checks`)."""
NODE_START_SECONDS = 900
"""Our allowance for a new GPU node to start, from the scale-up to its device plugin's GPUs: the
instance launched, the node registered, the GPU Operator's driver and plugin ready."""
POD_START_SECONDS = 300
"""Our allowance for the validation pod to start once the node's driver and device plugin are up
(the validator's image pulled, which its first init container shares): no source bounds it."""
TOOL_IMAGE_PULL_SECONDS = 300
"""Our allowance to pull each tool's image (DCGM's, nccl-tests'), which the kubelet pulls only
when the pod reaches that init container, after the tools before it ran: nccl-tests' image is
CUDA 12.8's devel image with a build toolchain, EFA, Open MPI and NCCL for five GPU
architectures (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/
nccl-tests.Dockerfile), several GB; DCGM's is given as long. 300 s pulls and unpacks 5 GB at
under 20 MB/s, from a registry outside the cloud's own; no source bounds it."""


def worst_case_seconds(validation: PoolValidation, gpus: int) -> int:
    """The longest a node of `gpus` GPUs of a pool with `validation` waits for its validation to
    pass: every tool's image pulled within our allowance, and every tool it runs reaching its
    timeout. 0 where the pool's nodes are not validated."""
    if not validation.enabled:
        return 0
    skipped = set(validation.skip_checks)
    seconds = POD_START_SECONDS
    if not skipped >= SMI_CHECKS:
        seconds += NVIDIA_SMI_TIMEOUT
    if "nvlink" not in skipped:
        seconds += NVIDIA_SMI_TIMEOUT
    if "dcgm-diag" not in skipped:
        seconds += TOOL_IMAGE_PULL_SECONDS + DCGM_DIAG_TIMEOUT[str(validation.dcgm_diag_level)]
    if validation.runs_nccl_test(gpus):
        seconds += TOOL_IMAGE_PULL_SECONDS + NCCL_TIMEOUT
    return seconds


def until_validated_seconds(pools: Iterable[GpuPoolSpec]) -> int:
    """The longest a new node of any of `pools` may take from its scale-up to its validation's
    end: its start and its validation's worst case; 0 where no pool validates its nodes. Before
    its machine is resolved a pool may not say how many GPUs its nodes have: then the NCCL test,
    which only a node of several GPUs runs, is counted, an upper bound."""
    longest = max(
        (worst_case_seconds(pool.validation, pool.gpus_per_node or 2) for pool in pools),
        default=0,
    )
    return NODE_START_SECONDS + longest if longest else 0


def go_duration(seconds: int) -> str:
    """`seconds` as a Go duration (`time.ParseDuration`), spelt as Go prints one: `37m0s`."""
    return f"{seconds // 60}m{seconds % 60}s"

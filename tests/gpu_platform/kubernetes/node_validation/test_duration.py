"""The longest a node of a pool stays unvalidated: the validator's tools, each at its timeout."""

import pytest

from gpu_platform.config import GpuPoolSpec
from gpu_platform.kubernetes.canary_gate import gate_start_seconds
from gpu_platform.kubernetes.node_validation.duration import worst_case_seconds
from gpu_platform.node_identity import GpuShape, resolve_pool

# validate.py's timeouts: `nvidia-smi` 60 s (its -q -x, and its nvlink --status), `dcgmi diag`
# 300 s at level 1 and 900 at level 2, the NCCL test 600; and 300 s for the pod to start.
SMI, START = 60, 300
# DCGM's and nccl-tests' images are pulled when their init containers start: 300 s each on top.
DIAG_1, DIAG_2, NCCL = 300 + 300, 900 + 300, 600 + 300
# The NCCL test runs only where the pool gives the bandwidth to hold a node to.
BANDWIDTH = {"expectedBusBandwidthGbps": 400}


def pool(**validation: object) -> GpuPoolSpec:
    return GpuPoolSpec.model_validate(
        {
            "name": "a100",
            "instanceTypes": ["p4de.24xlarge"],
            "max": 2,
            "validation": validation,
        }
    )


@pytest.mark.parametrize(
    ("validation", "gpus", "seconds"),
    [
        pytest.param({}, 8, START + SMI + SMI + DIAG_1, id="level-1-no-bandwidth-no-nccl"),
        pytest.param(BANDWIDTH, 8, START + SMI + SMI + DIAG_1 + NCCL, id="level-1"),
        pytest.param(
            {**BANDWIDTH, "dcgmDiagLevel": 2}, 8, START + SMI + SMI + DIAG_2 + NCCL, id="level-2"
        ),
        pytest.param(BANDWIDTH, 1, START + SMI + SMI + DIAG_1, id="one-gpu-no-nccl"),
        pytest.param(
            {**BANDWIDTH, "skipChecks": ["dcgm-diag", "nccl-bandwidth", "nvlink"]},
            8,
            START + SMI,
            id="skips",
        ),
        pytest.param(
            {"skipChecks": ["gpu-count", "driver", "ecc", "memory"]},
            1,
            START + SMI + SMI + DIAG_1,
            id="smi-still-read-for-pcie",
        ),
        pytest.param({"enabled": False}, 8, 0, id="off"),
    ],
)
def test_the_worst_case_is_every_tool_at_its_timeout(
    validation: dict[str, object], gpus: int, seconds: int
) -> None:
    assert worst_case_seconds(pool(**validation).validation, gpus) == seconds


def test_the_canary_gate_waits_for_its_nodes_validation() -> None:
    gpus = GpuShape("a100-80gb", 8)

    validated = resolve_pool(pool(dcgmDiagLevel=2, **BANDWIDTH), 0, gpus)
    unvalidated = resolve_pool(pool(enabled=False), 0, gpus)

    # The gate's 900 s for the node's start, and the validation's worst case on top.
    assert gate_start_seconds(validated) == 900 + START + SMI + SMI + DIAG_2 + NCCL
    assert gate_start_seconds(unvalidated) == 900

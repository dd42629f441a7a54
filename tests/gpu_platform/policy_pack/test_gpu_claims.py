"""`gpu-claims`: ResourceClaims and claim templates take GPUs through the class of a model, an
exact count of at most `maxGpusPerClaim`, as `gpu-pods-max-gpus` counts a pod's GPUs. The classes
NVIDIA's DRA driver installs (nvidia-dra-driver-gpu v25.12.0 templates/deviceclass-gpu.yaml,
deviceclass-mig.yaml, deviceclass-vfio-gpu.yaml) take any model, and the tenants' quotas hold
them at none."""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import Analyze, messages, resource

POLICY = "gpu-claims"
TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
CLAIM = "kubernetes:resource.k8s.io/v1:ResourceClaim"


def exactly(device_class: str = "l4.gpu-platform.io", **fields: Any) -> dict[str, Any]:
    return {"name": "gpu", "exactly": {"deviceClassName": device_class, **fields}}


def claim_spec(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"requests": list(requests)}}


def found(
    analyze: Analyze, *requests: dict[str, Any], kind: str = TEMPLATE, **config: Any
) -> list[str]:
    spec = claim_spec(*requests)
    inputs = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": kind.rpartition(":")[2],
        "metadata": {"name": "gpu", "namespace": "team-a"},
        "spec": {"spec": spec} if kind == TEMPLATE else spec,
    }
    verdicts = analyze(resource(kind, "gpu", inputs), config={POLICY: config} if config else None)
    return messages(verdicts, POLICY)


@pytest.mark.parametrize("kind", [TEMPLATE, CLAIM])
def test_a_claim_of_a_models_gpus_within_the_limit_passes(analyze: Analyze, kind: str) -> None:
    assert found(analyze, exactly(count=2), kind=kind) == []


def test_the_platforms_own_claim_template_passes(analyze: Analyze) -> None:
    # gpu_platform/kubernetes/dra_devices.py `claim_template_spec`.
    assert found(analyze, exactly(allocationMode="ExactCount", count=1)) == []


def test_a_claim_of_other_devices_is_left_alone(analyze: Analyze) -> None:
    assert found(analyze, exactly("nic.example.com", allocationMode="All")) == []


@pytest.mark.parametrize("device_class", ["gpu.nvidia.com", "mig.nvidia.com"])
def test_a_claim_through_the_drivers_classes_is_reported(
    analyze: Analyze, device_class: str
) -> None:
    (message,) = found(analyze, exactly(device_class))

    assert message.startswith(
        f'spec.spec.devices.requests[0].exactly.deviceClassName is "{device_class}"'
    )


def test_a_claim_of_every_gpu_of_a_node_is_reported(analyze: Analyze) -> None:
    (message,) = found(analyze, exactly(allocationMode="All"), kind=CLAIM)

    assert message.startswith('spec.devices.requests[0].exactly.allocationMode is "All"')


def test_a_claim_of_more_gpus_than_a_pod_may_have_is_reported(analyze: Analyze) -> None:
    # Two requests of 3 and, of two alternatives, the larger: 2. The policy's default is 8.
    alternatives = {
        "name": "either",
        "firstAvailable": [
            {"name": "l4", "deviceClassName": "l4.gpu-platform.io", "count": 2},
            {"name": "t4", "deviceClassName": "t4.gpu-platform.io"},
        ],
    }

    assert found(analyze, exactly(count=3), alternatives, maxGpusPerClaim=8) == []
    assert found(analyze, exactly(count=3), alternatives, maxGpusPerClaim=4) == [
        "the claim (spec.spec.devices) asks for 5 GPUs, more than the 4 allowed per claim"
        " (maxGpusPerClaim). Fix: ask for at most 4, or raise maxGpusPerClaim if a node really has"
        " that many."
    ]

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
    api_version, kind_name = kind.split(":")[1:]
    inputs = {
        "apiVersion": api_version,
        "kind": kind_name,
        "metadata": {"name": "gpu", "namespace": "team-a"},
        "spec": {"spec": spec} if kind_name == "ResourceClaimTemplate" else spec,
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


def test_claims_of_the_beta_versions_are_judged_alike(analyze: Analyze) -> None:
    # Kubernetes 1.34 to 1.36 serve resource.k8s.io/v1beta2 (requests as v1's, under `exactly`)
    # and v1beta1, whose requests hold `deviceClassName`, `allocationMode` and `count`
    # themselves (staging/src/k8s.io/api/resource/v1beta1/types.go, `DeviceRequest`).
    beta2 = "kubernetes:resource.k8s.io/v1beta2:ResourceClaimTemplate"
    beta1 = "kubernetes:resource.k8s.io/v1beta1:ResourceClaim"
    whole_node = {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}

    assert [m[:60] for m in found(analyze, exactly("gpu.nvidia.com"), kind=beta2)] == [
        'spec.spec.devices.requests[0].exactly.deviceClassName is "gp'
    ]
    assert [m[:50] for m in found(analyze, whole_node, kind=beta1)] == [
        'spec.devices.requests[0].deviceClassName is "gpu.n',
        'spec.devices.requests[0].allocationMode is "All": ',
    ]

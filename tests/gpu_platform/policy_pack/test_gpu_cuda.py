"""The stack policies that hold GPU pods to what their pools' drivers run, through the analyzer,
as NVIDIA's CUDA compatibility documentation defines it:

- docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html, Table 1 "CUDA
  Toolkit 11.x, 12.x, and 13.x Driver Version Ranges": an application of a CUDA major release
  runs, with a limited feature set, on a driver of at least R450 (11.x, from 450.80.02 by the
  table's note), R525 (12.x) or R580 (13.x);
- docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html,
  "Maximum CUDA Major Version Supported Without Forward Compatibility Package": R535 CUDA 12,
  R580 CUDA 13;
- NVIDIA's `nvidia/cuda:12.9.1-*` images declare `NVIDIA_REQUIRE_CUDA=cuda>=12.9
  brand=tesla,driver>=535,driver<536 ...`: NVIDIA runs them on R535.
"""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    eks_node_group,
    gke_node_pool,
    gpu_pod_spec,
    messages,
    resource,
    select_pools,
    workload,
)

POLICY = "gpu-pods-cuda-within-driver"
MINOR = "gpu-pods-cuda-minor-compatibility"
KNOWN = "gpu-pods-cuda-known"
# Each driver branch's labels, as gpu_platform/drivers.py sets them: the driver and the newest
# CUDA it runs natively (the CUDA Toolkit release notes' table of minimum drivers).
R535 = {"gpu-platform.io/nvidia-driver": "535.288.01", "gpu-platform.io/cuda": "12.2"}
R570 = {"gpu-platform.io/nvidia-driver": "570.195.03", "gpu-platform.io/cuda": "12.8"}
R580 = {"gpu-platform.io/nvidia-driver": "580.95.05", "gpu-platform.io/cuda": "13.0"}
CUDA_12_9 = "nvidia/cuda:12.9.1-base-ubuntu22.04"
CUDA_13_0 = "nvcr.io/nvidia/cuda:13.0.1-runtime-ubuntu24.04"


def pool(labels: dict[str, str] = R570, *, gke: bool = False, name: str = "l4") -> Any:
    found = gke_node_pool(f"{name}-pool") if gke else eks_node_group(name=f"{name}-nodes")
    target = found.inputs["nodeConfig"]["labels"] if gke else found.inputs["labels"]
    target.update({"gpu-platform.io/pool": name, **labels})
    return found


def pod(
    image: str = "registry.example.com/app:1.4.2",
    env: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    gpus: str = "1",
    pools: tuple[str, ...] = ("l4",),
) -> Any:
    spec = gpu_pod_spec(gpus)
    select_pools(spec, *pools)
    spec["containers"][0]["image"] = image
    if env:
        spec["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return workload("Deployment", spec, pod_metadata={"annotations": annotations or {}})


def verdicts_by_policy(verdicts: list[Any]) -> dict[str, int]:
    return {
        name: len(messages(verdicts, name)) for name in (POLICY, MINOR) if messages(verdicts, name)
    }


# --- NVIDIA's CUDA 12.9.1 images on R535, R570 and R580, and a 13.x image on R535 ---------------


def test_cuda_12_9_on_r535_runs_through_minor_version_compatibility(analyze: Analyze) -> None:
    verdicts = analyze(pool(R535), pod(CUDA_12_9))

    assert verdicts_by_policy(verdicts) == {MINOR: 1}


def test_cuda_12_9_on_r570_runs_through_minor_version_compatibility(analyze: Analyze) -> None:
    verdicts = analyze(pool(R570), pod(CUDA_12_9))

    assert verdicts_by_policy(verdicts) == {MINOR: 1}


def test_cuda_12_9_on_r580_runs_natively(analyze: Analyze) -> None:
    # Backward compatibility: an older major release runs on a newer driver.
    verdicts = analyze(pool(R580), pod(CUDA_12_9))

    assert verdicts_by_policy(verdicts) == {}


def test_cuda_13_on_r535_is_refused(analyze: Analyze) -> None:
    deployment = pod(CUDA_13_0)

    verdicts = analyze(pool(R535), deployment)

    (verdict,) = [v for v in verdicts if v.policy_name == POLICY]
    assert (verdict.enforcement_level, verdict.urn) == ("mandatory", deployment.urn)
    assert messages(verdicts, MINOR) == []


def test_a_newer_minor_release_than_r580_runs_is_advisory(analyze: Analyze) -> None:
    verdicts = analyze(pool(R580), pod("nvidia/cuda:13.1.0-runtime-ubuntu24.04"))

    (verdict,) = [v for v in verdicts if v.policy_name == MINOR]
    assert verdict.enforcement_level == "advisory"
    assert messages(verdicts, POLICY) == []


# --- The messages ---------------------------------------------------------------------------


CUDA_13_ON_R535 = (
    f'container "app" needs CUDA 13.0 (image {CUDA_13_0}), but pool "l4" runs NVIDIA'
    " driver 535.288.01, which runs CUDA 12.2 natively and CUDA 12.x at most without"
    " NVIDIA's forward compatibility package: a CUDA 13 application fails at its first CUDA"
    " call. Fix: use an image built for CUDA 12.x, or a pool with a newer driver."
)


def test_the_refusal_names_both_releases_and_the_fix(analyze: Analyze) -> None:
    verdicts = analyze(pool(R535), pod(CUDA_13_0))

    assert messages(verdicts, POLICY) == [CUDA_13_ON_R535]


def test_the_advisory_names_what_minor_version_compatibility_limits(analyze: Analyze) -> None:
    verdicts = analyze(pool(R535), pod(CUDA_12_9))

    (message,) = messages(verdicts, MINOR)
    assert message.startswith(
        f'container "app" needs CUDA 12.9 (image {CUDA_12_9}), and pool "l4" runs NVIDIA driver'
        " 535.288.01, which runs CUDA 12.2 natively: it runs through CUDA minor version"
        " compatibility, with a limited feature set (PTX newer than the driver's is not"
        " JIT-compiled"
    )


# --- The minor-compatibility floor ----------------------------------------------------------


def test_a_driver_below_the_release_familys_floor_is_refused(analyze: Analyze) -> None:
    # An R450 driver before 450.80.02 runs CUDA 11.0 only: minor version compatibility came with
    # 450.80.02 (minor-version-compatibility.html, the note under Table 1).
    early_r450 = {"gpu-platform.io/nvidia-driver": "450.51.06", "gpu-platform.io/cuda": "11.0"}

    verdicts = analyze(pool(early_r450), pod("nvidia/cuda:11.4.3-base-ubuntu20.04"))

    (message,) = messages(verdicts, POLICY)
    assert "but CUDA 11.x needs driver 450.80.02 or newer even with minor version" in message


def test_a_driver_at_the_release_familys_floor_runs_a_newer_minor_release(
    analyze: Analyze,
) -> None:
    r450 = {"gpu-platform.io/nvidia-driver": "450.80.02", "gpu-platform.io/cuda": "11.0"}

    verdicts = analyze(pool(r450), pod("nvidia/cuda:11.4.3-base-ubuntu20.04"))

    assert verdicts_by_policy(verdicts) == {MINOR: 1}


def test_a_pool_known_by_its_branch_alone_is_not_held_below_its_branchs_floor(
    analyze: Analyze,
) -> None:
    r450 = {"gpu-platform.io/nvidia-driver": "450", "gpu-platform.io/cuda": "11.0"}

    verdicts = analyze(pool(r450), pod("nvidia/cuda:11.4.3-base-ubuntu20.04"))

    assert messages(verdicts, POLICY) == []


# --- Pods that may land on several pools ------------------------------------------------------


def test_a_pod_that_may_land_on_several_pools_is_judged_on_each(analyze: Analyze) -> None:
    deployment = pod(CUDA_13_0, pools=("old", "new"))

    verdicts = analyze(pool(R535, name="old"), pool(R580, name="new"), deployment)

    (message,) = messages(verdicts, POLICY)
    assert 'pool "old" runs NVIDIA driver 535.288.01' in message


def test_a_pod_that_may_land_on_several_pools_gets_each_pools_verdict(analyze: Analyze) -> None:
    deployment = pod(CUDA_12_9, pools=("r535", "r570", "r580"))

    verdicts = analyze(
        pool(R535, name="r535"), pool(R570, name="r570"), pool(R580, name="r580"), deployment
    )

    assert [m.split(", which")[0].rsplit(" pool ", 1)[1] for m in messages(verdicts, MINOR)] == [
        '"r535" runs NVIDIA driver 535.288.01',
        '"r570" runs NVIDIA driver 570.195.03',
    ]
    assert messages(verdicts, POLICY) == []


# A pod that names no pool by `gpu-platform.io/pool` may land on every pool whose labels its
# node selector and required node affinity admit, as the scheduler matches them
# (kubernetes/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go).


def unpinned_pod(image: str, spec_change: dict[str, Any] | None = None) -> Any:
    spec = gpu_pod_spec()
    spec.pop("nodeSelector")
    spec.update(spec_change or {})
    spec["containers"][0]["image"] = image
    return workload("Deployment", spec)


def test_a_pod_that_selects_no_pool_is_judged_on_every_pool(analyze: Analyze) -> None:
    verdicts = analyze(pool(R535, name="old"), pool(R580, name="new"), unpinned_pod(CUDA_13_0))

    (message,) = messages(verdicts, POLICY)
    assert 'pool "old" runs NVIDIA driver 535.288.01' in message


def test_a_pod_that_selects_by_accelerator_is_judged_on_each_pool_of_it(analyze: Analyze) -> None:
    # Both test pools carry `gpu-platform.io/accelerator: l4`, as the platform labels them.
    deployment = unpinned_pod(CUDA_13_0, {"nodeSelector": {"gpu-platform.io/accelerator": "l4"}})

    verdicts = analyze(pool(R535, name="old"), pool(R580, name="new"), deployment)

    (message,) = messages(verdicts, POLICY)
    assert 'pool "old"' in message


def test_a_pod_whose_selector_no_pool_matches_holds_to_none(analyze: Analyze) -> None:
    deployment = unpinned_pod(CUDA_13_0, {"nodeSelector": {"gpu-platform.io/accelerator": "h100"}})

    verdicts = analyze(pool(R535, name="old"), deployment)

    assert messages(verdicts, POLICY) == []


def test_a_pool_the_pods_affinity_excludes_holds_nothing(analyze: Analyze) -> None:
    not_old = {"key": "gpu-platform.io/pool", "operator": "NotIn", "values": ["old"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [not_old]}]
            }
        }
    }
    deployment = unpinned_pod(CUDA_13_0, {"affinity": affinity})

    verdicts = analyze(pool(R535, name="old"), pool(R580, name="new"), deployment)

    assert messages(verdicts, POLICY) == []


def test_a_tenants_pod_that_selects_no_pool_is_judged_on_every_configured_pool(
    analyze: Analyze,
) -> None:
    verdicts = analyze(unpinned_pod(CUDA_13_0), config=tenant_config())

    (message,) = messages(verdicts, POLICY)
    assert 'pool "l4" runs NVIDIA driver 535.288.01' in message


# --- A tenant's own stack, on the platform stack's pools --------------------------------------

# The platform stack's `gpuPools` output, as gpu_platform/node_identity.py `pool_software`
# writes it.
PLATFORM_POOLS = {
    "l4": {
        "nvidiaDriver": "535.288.01",
        "cuda": "12.2",
        "pinnedBy": "AMI release 1.33.5-20260714",
        "canaryOf": None,
    },
    "h100": {
        "nvidiaDriver": "580.95.05",
        "cuda": "13.0",
        "pinnedBy": "AMI release 1.33.5-20260714",
        "canaryOf": None,
    },
}


def tenant_config(pools: dict[str, Any] = PLATFORM_POOLS) -> dict[str, Any]:
    return {name: {"gpuPools": pools} for name in (POLICY, MINOR, KNOWN)}


def test_a_stack_without_pools_is_held_to_the_configured_pools(analyze: Analyze) -> None:
    deployment = pod(CUDA_13_0)

    verdicts = analyze(deployment, config=tenant_config())

    (verdict,) = [v for v in verdicts if v.policy_name == POLICY]
    assert (verdict.enforcement_level, verdict.urn) == ("mandatory", deployment.urn)
    assert 'pool "l4" runs NVIDIA driver 535.288.01' in verdict.message
    assert messages(verdicts, KNOWN) == []


def test_a_stack_without_pools_and_without_the_setting_says_once_it_was_not_judged(
    analyze: Analyze,
) -> None:
    # Two GPU workloads, one advisory for the stack, from the advisory policy alone: the
    # mandatory policy has no pool to refuse anything on.
    first = pod(CUDA_13_0)
    second = workload("StatefulSet", gpu_pod_spec("1"))

    verdicts = analyze(first, second)

    assert messages(verdicts, POLICY) == []
    assert messages(verdicts, MINOR) == []
    (verdict,) = [v for v in verdicts if v.policy_name == KNOWN]
    assert verdict.enforcement_level == "advisory"
    assert verdict.message == (
        f"2 GPU workload(s) ({first.urn}, {second.urn}) were not held to any pool's driver:"
        " the stack declares no node pool, and the `gpuPools` parameter of the CUDA policies"
        " lists no pool, so gpu-pods-cuda-within-driver could not judge whether their CUDA"
        " release runs there. Fix: set `gpuPools` of each of"
        " gpu-pods-cuda-within-driver, gpu-pods-cuda-minor-compatibility, gpu-pods-cuda-known"
        " in the policy pack's config to the platform stack's gpuPools output (pulumi stack"
        " output gpuPools --stack <platform stack>)."
    )


SMOKE_TEST_CONTAINER = {
    "name": "nvidia-smi",
    "image": "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04",
    "command": ["nvidia-smi"],
    "env": [{"name": "NVIDIA_DISABLE_REQUIRE", "value": "true"}],
}


@pytest.mark.parametrize(
    ("changes", "reported"),
    [
        ({}, False),
        ({"env": []}, True),
        ({"command": ["python", "train.py"]}, True),
        ({"command": ["nvidia-smi"], "args": ["&&", "python", "train.py"]}, True),
        ({"image": "docker.io/acme/trainer:1.0"}, True),
        ({"image": "nvcr.io/nvidia/cuda-look-alike:12.9.1"}, True),
    ],
    ids=[
        "the platform's",
        "a look-alike that checks CUDA",
        "another command",
        "more arguments",
        "another image",
        "an image beside the platform's repository",
    ],
)
def test_the_platforms_smoke_test_needs_no_cuda_release(
    analyze: Analyze, changes: dict[str, Any], reported: bool
) -> None:
    # Where its pool's driver is unknown the smoke test runs only `nvidia-smi` (its command,
    # `smoke_test_job_spec` in gpu_platform/kubernetes/tenant_namespace.py), which the toolkit
    # mounts from the node's driver, from nvcr.io/nvidia/cuda, and sets NVIDIA_DISABLE_REQUIRE
    # so the toolkit skips the image's CUDA requirement: no driver can fail it on CUDA. On EKS
    # Auto Mode, whose driver AWS does not publish, a stack's pools have no known CUDA release.
    spec = gpu_pod_spec("1")
    spec["containers"][0].update({**SMOKE_TEST_CONTAINER, **changes})
    smoke_test = workload("Job", spec, name="gpu-smoke-test", namespace="ml-sandbox")

    verdicts = analyze(pool({}), smoke_test)

    assert len(messages(verdicts, KNOWN)) == int(reported)


@pytest.mark.parametrize(("second_runs", "reported"), [("nvidia-smi", False), ("python", True)])
def test_each_gpu_container_of_the_smoke_test_must_run_only_nvidia_smi(
    analyze: Analyze, second_runs: str, reported: bool
) -> None:
    spec = gpu_pod_spec("1")
    spec["containers"][0].update(SMOKE_TEST_CONTAINER)
    second = {**spec["containers"][0], "name": "second", "command": [second_runs]}
    spec["containers"].append(second)
    smoke_test = workload("Job", spec, name="gpu-smoke-test", namespace="ml-sandbox")

    verdicts = analyze(pool({}), smoke_test)

    assert len(messages(verdicts, KNOWN)) == int(reported)


def test_the_advisory_names_five_workloads_and_counts_the_rest(analyze: Analyze) -> None:
    deployments = [workload("Deployment", gpu_pod_spec("1"), name=f"app-{i}") for i in range(7)]

    verdicts = analyze(*deployments)

    (message,) = messages(verdicts, KNOWN)
    named = ", ".join(d.urn for d in deployments[:5])
    assert message.startswith(f"7 GPU workload(s) ({named} and 2 more) were not held")


def test_a_stack_without_pools_or_gpu_pods_needs_no_setting(analyze: Analyze) -> None:
    verdicts = analyze(pod(CUDA_13_0, gpus="0"))

    assert messages(verdicts, KNOWN) == []


def test_a_configured_pool_the_pod_does_not_select_holds_nothing(analyze: Analyze) -> None:
    verdicts = analyze(pod(CUDA_13_0, pools=("h100",)), config=tenant_config())

    assert verdicts_by_policy(verdicts) == {}


def test_a_pool_the_stack_declares_wins_over_a_configured_one(analyze: Analyze) -> None:
    verdicts = analyze(pool(R580), pod(CUDA_13_0), config=tenant_config())

    assert messages(verdicts, POLICY) == []


def test_a_configured_pool_without_a_known_driver_holds_nothing(analyze: Analyze) -> None:
    unknown = {"l4": {"nvidiaDriver": None, "cuda": None, "pinnedBy": None, "canaryOf": None}}

    deployment = pod(CUDA_13_0)

    verdicts = analyze(deployment, config=tenant_config(unknown))

    assert messages(verdicts, POLICY) == []
    # The setting gives no pool a CUDA release, as a platform stack's gpuPools output does for
    # pools whose driver it does not know: the stack's pods were not judged, and the advice is
    # not to set what is already set.
    (message,) = messages(verdicts, KNOWN)
    assert message == (
        f"1 GPU workload(s) ({deployment.urn}) were not held to any pool's driver: no pool has"
        " a known CUDA release (`gpuPools` gives no cuda for l4), so gpu-pods-cuda-within-driver"
        " could not judge whether their CUDA release runs there. Fix: a platform stack knows a"
        " pool's CUDA release only where it knows the driver of the pool's node image"
        " (`gpu-platform plan` shows each pool's): pin the GPU pools to a node image whose driver"
        " it knows, then set `gpuPools` of each of gpu-pods-cuda-within-driver,"
        " gpu-pods-cuda-minor-compatibility, gpu-pods-cuda-known to the platform stack's gpuPools"
        " output again. A pool without GPUs needs nothing."
    )


# --- Where a pod's CUDA release is read -------------------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/cuda:13.0.1-runtime-ubuntu24.04",
        "docker.io/pytorch/pytorch:2.9.0-cuda13.0-cudnn9-runtime",
        "registry.example.com/vllm:0.11.0-cu130",
    ],
)
def test_the_cuda_release_is_read_from_the_image_tag(analyze: Analyze, image: str) -> None:
    verdicts = analyze(pool(R570), pod(image))

    assert f"(image {image})" in messages(verdicts, POLICY)[0]


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04",
        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        "registry.example.com/train:3-cu118",
    ],
)
def test_an_image_at_or_below_the_pools_cuda_passes(analyze: Analyze, image: str) -> None:
    verdicts = analyze(pool(R570), pod(image))

    assert verdicts_by_policy(verdicts) == {}
    assert messages(verdicts, KNOWN) == []


def test_nvidia_require_cuda_is_read_from_the_env(analyze: Analyze) -> None:
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=13.0 brand=tesla,driver>=535,driver<536"}

    verdicts = analyze(pool(R570), pod(env=env))

    assert len(messages(verdicts, POLICY)) == 1


def test_cuda_version_is_read_from_the_env(analyze: Analyze) -> None:
    verdicts = analyze(pool(R570), pod(env={"CUDA_VERSION": "13.0.1"}))

    assert len(messages(verdicts, POLICY)) == 1


def test_the_annotation_comes_before_the_image_tag(analyze: Analyze) -> None:
    deployment = pod(CUDA_13_0, annotations={"gpu-platform.io/cuda-version": "12.4"})

    verdicts = analyze(pool(R570), deployment)

    assert verdicts_by_policy(verdicts) == {}


def test_a_gke_pool_is_read_from_its_node_config(analyze: Analyze) -> None:
    verdicts = analyze(pool(R570, gke=True), pod(CUDA_13_0))

    assert len(messages(verdicts, POLICY)) == 1


def test_an_unknown_cuda_release_is_advisory(analyze: Analyze) -> None:
    deployment = pod("registry.example.com/notebook:2026.11")

    verdicts = analyze(pool(R570), deployment)

    assert messages(verdicts, POLICY) == []
    (verdict,) = [v for v in verdicts if v.policy_name == KNOWN]
    assert (verdict.enforcement_level, verdict.urn) == ("advisory", deployment.urn)
    assert "set the pod annotation gpu-platform.io/cuda-version" in verdict.message


def test_a_pod_without_gpus_is_not_held_to_the_ceiling(analyze: Analyze) -> None:
    verdicts = analyze(pool(R570), pod(CUDA_13_0, gpus="0"))

    assert verdicts_by_policy(verdicts) == {}
    assert messages(verdicts, KNOWN) == []


def test_a_pool_without_a_cuda_label_holds_no_pod_and_says_so(analyze: Analyze) -> None:
    # A platform stack labels a pool with its CUDA release only where it knows the driver (an
    # EKS AMI release missing from its tables has none), and a system node group has none: a
    # stack whose pools all lack it judged nothing.
    deployment = pod(CUDA_13_0)

    verdicts = analyze(pool({}), pool({}, name="system"), deployment)

    assert verdicts_by_policy(verdicts) == {}
    (message,) = messages(verdicts, KNOWN)
    assert message.startswith(
        f"1 GPU workload(s) ({deployment.urn}) were not held to any pool's driver: no pool has"
        " a known CUDA release (the stack's node pool(s) l4, system carry no"
        " gpu-platform.io/cuda label), so"
    )


# --- Pods that claim GPUs through DRA -----------------------------------------------------------


def claiming_pod(
    image: str, template: str = "gpu-l4", uses_claim: bool = True, name: str = "app"
) -> Any:
    """A Deployment on pool l4 whose container claims a GPU from `template` (the platform's
    `gpu-l4` in every tenant namespace, docs/dra.md), or, without `uses_claim`, names no claim
    though the pod holds one."""
    spec = gpu_pod_spec()
    select_pools(spec, "l4")
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    container = spec["containers"][0]
    container["image"] = image
    container["resources"] = {"claims": [{"name": "gpu"}]} if uses_claim else {}
    return workload("Deployment", spec, name=name)


def test_a_container_claiming_a_gpu_is_held_to_its_pools_driver(analyze: Analyze) -> None:
    verdicts = analyze(pool(R535), claiming_pod(CUDA_13_0))

    assert messages(verdicts, POLICY) == [CUDA_13_ON_R535]


def test_a_container_claiming_a_gpu_gets_the_minor_compatibility_advisory(
    analyze: Analyze,
) -> None:
    verdicts = analyze(pool(R580), claiming_pod("nvidia/cuda:13.1.0-runtime-ubuntu24.04"))

    assert verdicts_by_policy(verdicts) == {MINOR: 1}


def test_a_container_claiming_a_gpu_says_its_cuda_release(analyze: Analyze) -> None:
    verdicts = analyze(pool(R580), claiming_pod("registry.example.com/notebook:2026.11"))

    (message,) = messages(verdicts, KNOWN)
    assert message.startswith('container "app" runs on pool "l4" (CUDA 13.0 and older), but')


def test_a_claim_of_a_template_the_stack_declares_is_judged_by_its_class(
    analyze: Analyze,
) -> None:
    # The stack's own template of two L4s takes GPUs; one of network cards does not.
    def template(name: str, device_class: str) -> Any:
        inputs = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "team-a"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "d", "exactly": {"deviceClassName": device_class, "count": 2}}
                        ]
                    }
                }
            },
        }
        return resource("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate", name, inputs)

    gpus = claiming_pod(CUDA_13_0, template="two-l4", name="gpus")
    nics = claiming_pod(CUDA_13_0, template="nics", name="nics")

    verdicts = analyze(
        pool(R535),
        template("two-l4", "l4.gpu-platform.io"),
        template("nics", "nic.example.com"),
        gpus,
        nics,
    )

    assert [v.urn for v in verdicts if v.policy_name == POLICY] == [gpus.urn]


def test_a_container_that_names_no_claim_is_not_judged(analyze: Analyze) -> None:
    # Only a container naming the claim in resources.claims gets its devices.
    verdicts = analyze(pool(R535), claiming_pod(CUDA_13_0, uses_claim=False))

    assert verdicts_by_policy(verdicts) == {}
    assert messages(verdicts, KNOWN) == []


def test_a_tenants_claiming_pod_without_pools_is_said_not_to_be_judged(analyze: Analyze) -> None:
    deployment = claiming_pod(CUDA_13_0)

    verdicts = analyze(deployment)

    (message,) = messages(verdicts, KNOWN)
    assert message.startswith(f"1 GPU workload(s) ({deployment.urn}) were not held")

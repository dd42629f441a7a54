"""`gpu-claims`: ResourceClaims and claim templates take GPUs through the class of a model, an
exact count of at most `maxGpusPerClaim`, as `gpu-pods-max-gpus` counts a pod's GPUs. The classes
NVIDIA's DRA driver installs (nvidia-dra-driver-gpu v25.12.0 templates/deviceclass-gpu.yaml,
deviceclass-mig.yaml, deviceclass-vfio-gpu.yaml) take any model, and the tenants' quotas hold
them at none."""

import ast
from typing import Any

import pytest

from gpu_platform.kubernetes.dra_devices import PRODUCT_NAMES, claim_template_name
from gpu_platform.node_identity import DRA_TAINT
from gpu_platform.offline.analyzer import PACK_DIR
from gpu_platform.offline.program import PlannedResource
from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    messages,
    resource,
    restricted_pod_spec,
    workload,
)

POLICY = "gpu-claims"
TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
CLAIM = "kubernetes:resource.k8s.io/v1:ResourceClaim"


def exactly(device_class: str = "l4.gpu-platform.io", **fields: Any) -> dict[str, Any]:
    return {"name": "gpu", "exactly": {"deviceClassName": device_class, **fields}}


def claim_spec(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"requests": list(requests)}}


def declared(
    *requests: dict[str, Any],
    kind: str = TEMPLATE,
    name: str = "gpu",
    namespace: str | None = "team-a",
) -> PlannedResource:
    spec = claim_spec(*requests)
    api_version, kind_name = kind.split(":")[1:]
    inputs = {
        "apiVersion": api_version,
        "kind": kind_name,
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        "spec": {"spec": spec} if kind_name == "ResourceClaimTemplate" else spec,
    }
    return resource(kind, name, inputs)


def found(
    analyze: Analyze, *requests: dict[str, Any], kind: str = TEMPLATE, **config: Any
) -> list[str]:
    verdicts = analyze(declared(*requests, kind=kind), config={POLICY: config} if config else None)
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


def test_the_fix_for_a_claim_through_the_drivers_class_fits_stacks_with_and_without_dra_pools(
    analyze: Analyze,
) -> None:
    # The policy judges one claim at a time and cannot tell whether the stack has DRA pools,
    # whose models' classes exist only there.
    assert found(analyze, exactly("gpu.nvidia.com")) == [
        'spec.spec.devices.requests[0].exactly.deviceClassName is "gpu.nvidia.com", NVIDIA\'s DRA'
        " driver's class of GPUs of any model: tenants claim GPUs only through the platform's"
        " classes, each of one model and capped at the namespace's gpuQuota. Fix: on a stack with"
        " DRA pools, claim through the class of the model, `<model>.gpu-platform.io` (the stack's"
        " gpuModels output names it); on a stack without, which has no such class, ask for"
        " nvidia.com/gpu in the containers' limits instead."
    ]


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


# --- gpu-pods-max-claimed-gpus: a pod's claimed GPUs against maxGpusPerPod ----------------------

MAX_CLAIMED = "gpu-pods-max-claimed-gpus"


def claiming_pod(
    *claims: dict[str, str], gpus: str | None = None, namespace: str | None = "team-a"
) -> PlannedResource:
    """A Pod in `namespace` whose container uses each of `claims` (pod claims, each named), and
    counts `gpus` nvidia.com/gpu beside them where given."""
    spec = restricted_pod_spec()
    spec["resourceClaims"] = list(claims)
    resources: dict[str, Any] = {"claims": [{"name": claim["name"]} for claim in claims]}
    if gpus is not None:
        resources["limits"] = {"nvidia.com/gpu": gpus}
    spec["containers"][0]["resources"] = resources
    return workload("Pod", spec, namespace=namespace)


def from_template(template: str, count: int) -> list[dict[str, str]]:
    return [{"name": f"gpu-{i}", "resourceClaimTemplateName": template} for i in range(count)]


def over(claimed: int, allowed: int = 8, counted: int = 0) -> str:
    also = f", and counts {counted} more as resources" if counted else ""
    return (
        f"the pod (spec.resourceClaims) claims {claimed} GPUs through DRA{also}:"
        f" {claimed + counted}, more than the {allowed} allowed per pod (maxGpusPerPod). Fix:"
        f" claim at most {allowed}, or raise maxGpusPerPod if a node really has that many."
    )


def test_a_pod_of_more_claims_of_the_platforms_template_than_allowed_is_refused(
    analyze: Analyze,
) -> None:
    # The template `gpu-l4` of every tenant namespace (docs/dra.md), declared by the platform's
    # stack, not this one: one GPU a claim.
    verdicts = analyze(claiming_pod(*from_template("gpu-l4", 12)))

    assert messages(verdicts, MAX_CLAIMED) == [over(12)]


def test_a_pod_within_the_limit_passes(analyze: Analyze) -> None:
    # The pod of docs/dra.md: one claim of one L4.
    verdicts = analyze(claiming_pod(*from_template("gpu-l4", 1)))

    assert messages(verdicts, MAX_CLAIMED) == []


def test_a_template_the_stack_declares_is_counted_by_its_requests(analyze: Analyze) -> None:
    four = declared(exactly(count=4), name="four-l4")

    two = analyze(four, claiming_pod(*from_template("four-l4", 2)))
    three = analyze(four, claiming_pod(*from_template("four-l4", 3)))

    assert messages(two, MAX_CLAIMED) == []
    assert messages(three, MAX_CLAIMED) == [over(12)]


def test_a_resource_claim_the_stack_declares_is_counted(analyze: Analyze) -> None:
    shared = declared(exactly(count=6), kind=CLAIM, name="shared-l4s")
    pod = claiming_pod(
        {"name": "shared", "resourceClaimName": "shared-l4s"},
        *from_template("gpu-l4", 3),
    )

    assert messages(analyze(shared, pod), MAX_CLAIMED) == [over(9)]


def test_the_limit_is_gpu_pods_max_gpus_setting(analyze: Analyze) -> None:
    # One setting of both policies: the pack's config refuses different values.
    limit = {"maxGpusPerPod": 2}
    verdicts = analyze(
        claiming_pod(*from_template("gpu-l4", 3)),
        config={MAX_CLAIMED: limit, "gpu-pods-max-gpus": limit},
    )

    assert messages(verdicts, MAX_CLAIMED) == [over(3, allowed=2)]


def test_gpus_counted_as_resources_are_added(analyze: Analyze) -> None:
    verdicts = analyze(claiming_pod(*from_template("gpu-l4", 4), gpus="5"))

    assert messages(verdicts, MAX_CLAIMED) == [over(4, counted=5)]


def test_claims_the_pack_does_not_know_or_of_other_devices_count_nothing(
    analyze: Analyze,
) -> None:
    # A network card's template, a template of another namespace, and one declared nowhere.
    nics = declared(exactly("nic.example.com", count=4), name="nics")
    elsewhere = declared(exactly(count=8), name="eight-l4", namespace="team-b")
    pod = claiming_pod(
        *from_template("nics", 4), *from_template("eight-l4", 2), *from_template("mine", 3)
    )

    assert messages(analyze(nics, elsewhere, pod), MAX_CLAIMED) == []


def test_a_template_declared_without_a_namespace_is_counted_for_a_pod_naming_one(
    analyze: Analyze,
) -> None:
    # It lands in its provider's default namespace, which may be the pod's.
    eight = declared(exactly(count=8), name="eight-l4", namespace=None)

    verdicts = analyze(eight, claiming_pod(*from_template("eight-l4", 2)))

    assert messages(verdicts, MAX_CLAIMED) == [over(16)]


def test_a_pod_without_a_namespace_counts_the_one_template_of_its_name(analyze: Analyze) -> None:
    eight = declared(exactly(count=8), name="eight-l4", namespace="team-b")

    verdicts = analyze(eight, claiming_pod(*from_template("eight-l4", 2), namespace=None))

    assert messages(verdicts, MAX_CLAIMED) == [over(16)]


def test_a_pod_without_a_namespace_counts_nothing_of_templates_of_its_name_in_two(
    analyze: Analyze,
) -> None:
    team_a = declared(exactly(count=8), name="eight-l4", namespace="team-a")
    team_b = declared(exactly(count=8), name="eight-l4", namespace="team-b")
    pod = claiming_pod(*from_template("eight-l4", 2), namespace=None)

    assert messages(analyze(team_a, team_b, pod), MAX_CLAIMED) == []


def test_a_claim_of_every_gpu_of_a_node_is_left_to_gpu_claims(analyze: Analyze) -> None:
    every = declared(exactly(allocationMode="All"), name="whole-node")

    verdicts = analyze(every, claiming_pod(*from_template("whole-node", 1)))

    assert messages(verdicts, MAX_CLAIMED) == []
    assert [m[:61] for m in messages(verdicts, POLICY)] == [
        'spec.spec.devices.requests[0].exactly.allocationMode is "All"'
    ]


def test_a_pod_of_a_workload_is_judged(analyze: Analyze) -> None:
    spec = restricted_pod_spec()
    spec["resourceClaims"] = from_template("gpu-l4", 9)

    verdicts = analyze(workload("Deployment", spec))

    assert messages(verdicts, MAX_CLAIMED) == [
        over(9).replace("(spec.resourceClaims)", "(spec.template.spec.resourceClaims)")
    ]


def pack_constant(name: str) -> Any:
    """The value of the pack module's constant `name`, read from its source: the pack runs in a
    process of its own, its modules importable only from its directory."""
    source = ast.parse((PACK_DIR / "gpu_claims.py").read_text())
    (value,) = [
        ast.literal_eval(node.value)
        for node in source.body
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) == name for t in node.targets)
    ]
    return value


def test_the_pack_knows_the_platforms_claim_templates_by_name() -> None:
    assert claim_template_name("l4") == pack_constant("PLATFORM_TEMPLATE_PREFIX") + "l4"


def test_the_pack_knows_the_models_the_platform_makes_claim_templates_for() -> None:
    assert set(pack_constant("PLATFORM_TEMPLATE_MODELS")) == set(PRODUCT_NAMES)


# --- gpu-claiming-pods-tolerate-gpu-taints ----------------------------------------------------

TOLERATE = "gpu-claiming-pods-tolerate-gpu-taints"
# gpu_platform/node_identity.py: every GPU node's taint, and every DRA pool's node's own.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}
DRA_TOLERATION = {"key": "gpu-platform.io/allocation", "operator": "Exists"}


def tolerating(*tolerations: dict[str, str], template: str = "gpu-l4") -> PlannedResource:
    pod = claiming_pod(*from_template(template, 1))
    pod.inputs["spec"]["tolerations"] = list(tolerations)
    return pod


def test_a_claiming_pod_tolerating_both_taints_passes(analyze: Analyze) -> None:
    verdicts = analyze(tolerating(GPU_TOLERATION, DRA_TOLERATION))

    assert messages(verdicts, TOLERATE) == []


def test_a_claiming_pod_tolerating_every_taint_passes(analyze: Analyze) -> None:
    assert messages(analyze(tolerating({"operator": "Exists"})), TOLERATE) == []


@pytest.mark.parametrize(
    ("tolerations", "missing"),
    [
        ((), "nvidia.com/gpu=present:NoSchedule or gpu-platform.io/allocation=dra:NoSchedule"),
        ((GPU_TOLERATION,), "gpu-platform.io/allocation=dra:NoSchedule"),
        ((DRA_TOLERATION,), "nvidia.com/gpu=present:NoSchedule"),
        (
            (GPU_TOLERATION, {**DRA_TOLERATION, "effect": "NoExecute"}),
            "gpu-platform.io/allocation=dra:NoSchedule",
        ),
    ],
    ids=["neither", "not the DRA taint", "not the GPU taint", "the DRA taint's other effect"],
)
def test_a_claiming_pod_missing_a_toleration_is_refused(
    analyze: Analyze, tolerations: tuple[dict[str, str], ...], missing: str
) -> None:
    verdicts = analyze(tolerating(*tolerations))

    assert messages(verdicts, TOLERATE) == [
        "the pod claims GPUs through DRA (spec.resourceClaims) but does not tolerate"
        f" {missing} (spec.tolerations), which every node with DRA GPUs carries; no admission"
        " plugin adds a toleration for a claim, so it would stay pending. Fix: add the"
        " tolerations of the stack's gpuModels output for the model it claims."
    ]


def test_a_pod_claiming_other_devices_needs_no_gpu_toleration(analyze: Analyze) -> None:
    nics = declared(exactly("nic.example.com"), name="nics")

    assert messages(analyze(nics, tolerating(template="nics")), TOLERATE) == []


def test_an_undeclared_template_named_gpu_but_no_model_needs_no_gpu_toleration(
    analyze: Analyze,
) -> None:
    # A NIC's template declared outside the stack: the platform's are `gpu-<model>` alone.
    assert messages(analyze(tolerating(template="gpu-direct-nic")), TOLERATE) == []


def test_the_pack_names_the_dra_taint_the_platform_sets() -> None:
    taint = pack_constant("DRA_TAINT")

    assert (DRA_TAINT.key, DRA_TAINT.value, DRA_TAINT.effect) == (*taint, "NoSchedule")

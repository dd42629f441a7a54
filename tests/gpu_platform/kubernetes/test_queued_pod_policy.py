"""The admission policy that keeps GPU pods Kueue does not manage out of queued namespaces: its
CEL evaluated with cel-python (as the node validation's policies are) against pods it must admit
and refuse, and the pods of the smoke test a queued namespace runs, once Kueue admits it."""

import copy
from typing import Any

import pytest

from gpu_platform.kubernetes.queued_pod_policy import queued_pod_policy
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS
from tests.gpu_platform.kubernetes.node_validation.pod_policy_invariants import denied
from tests.gpu_platform.kubernetes.node_validation.test_admission_policy import evaluate
from tests.kubernetes_schemas import validate

POLICY, BINDING = queued_pod_policy("gpu-platform.io/queue")
PLANNED = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
# The label Kueue writes into an admitted job's pod template (`PodSetLabel`,
# pkg/constants/constants.go, set in `getPodSetsInfoFromStatus`,
# pkg/controller/jobframework/reconciler.go at v0.19.2), here with a Job's one pod set's name.
ADMITTED = {"kueue.x-k8s.io/podset": "main"}
REFUSAL = (
    "Namespace ml-team is queued: its GPU pods come from jobs Kueue admits, and Kueue does not"
    " count the GPUs of any other pod, so queued jobs would start in part. Submit a Job,"
    " JobSet, RayJob or PyTorchJob to the queue, or run GPU services and notebooks in a tenant"
    " namespace with queue.enabled false (docs/queues.md)."
)


def pod(
    labels: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "serve", "image": "vllm/vllm-openai:v0.9.0"}
    if limits:
        container["resources"] = {"limits": limits}
    metadata: dict[str, Any] = {"name": "serve-0", "namespace": "ml-team"}
    if labels is not None:
        metadata["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [container]},
    }


def refusals(obj: dict[str, Any]) -> list[str]:
    """The messages the API server gives for refusing `obj`'s creation in `ml-team` (a
    validation's `messageExpression` where it has one); [] if admitted."""
    if not denied(POLICY["spec"], obj):
        return []
    activation = {"object": obj, "request": {"operation": "CREATE", "namespace": "ml-team"}}
    return [
        evaluate(v["messageExpression"], activation)
        for v in POLICY["spec"]["validations"]
        if not evaluate(v["expression"], activation)
    ]


@pytest.mark.parametrize(
    "refused",
    [
        pod(None, {"nvidia.com/gpu": "1"}),
        pod({"app": "vllm"}, {"nvidia.com/mig-1g.10gb": "1"}),
        pod({"kueue.x-k8s.io/queue-name": "default"}, {"nvidia.com/gpu.shared": "1"}),
    ],
    ids=["bare", "labelled", "naming its queue"],
)
def test_a_gpu_pod_no_admitted_job_owns_is_refused_naming_its_namespace(refused) -> None:
    # A plain Pod naming the queue is not queued either: Kueue's pod integration is off.
    assert refusals(refused) == [REFUSAL]


def test_a_gpu_pod_of_an_init_container_is_refused() -> None:
    obj = pod()
    obj["spec"]["initContainers"] = [
        {"name": "warm", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
    ]

    assert refusals(obj) == [REFUSAL]


@pytest.mark.parametrize(
    "admitted", [pod(ADMITTED, {"nvidia.com/gpu": "8"}), pod(), pod({}, {"cpu": "2"})]
)
def test_an_admitted_jobs_pods_and_cpu_pods_are_admitted(admitted) -> None:
    assert refusals(admitted) == []


def test_only_creations_in_queued_namespaces_are_judged() -> None:
    # Pods that ran before their namespace was queued stay updatable (their finalizers).
    constraints = POLICY["spec"]["matchConstraints"]

    assert [rule["operations"] for rule in constraints["resourceRules"]] == [["CREATE"]]
    assert constraints["namespaceSelector"] == {
        "matchExpressions": [{"key": "gpu-platform.io/queue", "operator": "Exists"}]
    }
    assert POLICY["spec"]["failurePolicy"] == "Fail"
    assert BINDING["spec"] == {
        "policyName": POLICY["metadata"]["name"],
        "validationActions": ["Deny"],
    }


@pytest.mark.parametrize("minor", SUPPORTED_KUBERNETES_VERSIONS)
def test_the_manifests_are_valid_kubernetes_objects(minor: str) -> None:
    for manifest in (POLICY, BINDING):
        validate(copy.deepcopy(manifest), minor)


def test_a_queued_namespaces_smoke_test_passes_once_kueue_admits_it(dev_plan) -> None:
    (planned,) = [
        r for r in dev_plan.of_type(PLANNED) if r.inputs["metadata"] == POLICY["metadata"]
    ]
    assert planned.inputs["spec"] == POLICY["spec"]
    job = dev_plan.named("ml-sandbox-gpu-smoke-test", "kubernetes:batch/v1:Job").inputs
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    template = copy.deepcopy(job["spec"]["template"])
    smoke = {"apiVersion": "v1", "kind": "Pod", **template}

    assert refusals(smoke) == [REFUSAL]
    smoke["metadata"].setdefault("labels", {}).update(ADMITTED)
    assert refusals(smoke) == []


def test_no_platform_namespace_is_judged(dev_plan) -> None:
    labelled = [
        r.inputs["metadata"]["name"]
        for r in dev_plan.of_type("kubernetes:core/v1:Namespace")
        if "gpu-platform.io/queue" in r.inputs["metadata"].get("labels", {})
    ]

    assert labelled == ["ml-sandbox"]

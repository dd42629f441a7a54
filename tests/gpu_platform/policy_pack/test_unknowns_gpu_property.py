"""Property: a value not known yet in one container or pod template hides no GPU rule's verdict
on the others, and the checks it skips are noted against that element.

The engine sends a value not known during preview as an unknown sentinel (pulumi v3.272.0
sdk/python/lib/pulumi/runtime/rpc.py `UNKNOWN`, the Go engine's `plugin.UnknownStringValue`);
pulumi-policy v1.21.0 `policy.py` hands a policy the properties through
`unknown_checking_proxy`, and `proxy.py` raises `UnknownValueError` when a policy reads one.

Two corpora, each element bad in its own way:
- a GPU Deployment of three containers on a time-sliced pool whose driver (R535) runs CUDA 12.2:
  each container runs an image on `:latest`, asks for 2 GPUs with a request of 1 and needs
  CUDA 13 (gpu-pods-pinned-images, gpu-resources-in-limits, gpu-pods-match-pool-sharing,
  gpu-pods-cuda-within-driver), and the pod, in a namespace that ends idle GPU pods, does not
  say how long it may sit idle (gpu-pods-declare-max-idle, a verdict on the pod that no
  container's unknown may hide, as any one container asking for GPUs makes it a GPU pod);
- GPU workload CRDs of several pod templates (PyTorchJob Master and Worker, a RayCluster head
  and two worker groups, a Trainer v2 runtime's initializer and node Jobs, a JobSet, a
  LeaderWorkerSet): each template asks for more MIG slices than allowed, selects no GPU nodes,
  does not tolerate the GPU taint and runs an image on `:latest` (gpu-pods-max-gpus,
  gpu-pods-select-gpu-nodes, gpu-pods-tolerate-gpu-taint, gpu-pods-pinned-images).

For each element (container 2 of 3, template 2 of 2, ...), every field within it (the element
itself, every mapping, list and value under it) is in turn replaced by the unknown value: the
violations of the other elements, and of the pod, must all still be reported. With the whole
element unknown, each policy that found a violation in it reports, through the advisory
`checks-deferred-at-preview` against the resource, that it skipped that element, by its path.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from gpu_platform.offline.program import PlannedResource
from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    FieldPath,
    eks_node_group,
    fields,
    gpu_pod_spec,
    namespace,
    resource,
    violations,
    with_unknown,
    workload,
)

DEFERRED = "checks-deferred-at-preview"
CONTAINER_POLICIES = (
    "gpu-pods-pinned-images",
    "gpu-resources-in-limits",
    "gpu-pods-match-pool-sharing",
    "gpu-pods-cuda-within-driver",
)
TEMPLATE_POLICIES = (
    "gpu-pods-max-gpus",
    "gpu-pods-select-gpu-nodes",
    "gpu-pods-tolerate-gpu-taint",
    "gpu-pods-pinned-images",
)
# A time-sliced pool whose driver runs CUDA 12.2 natively (the R535 branch).
POOL_LABELS = {
    "gpu-platform.io/pool": "l4",
    "nvidia.com/device-plugin.config": "time-slicing-4",
    "gpu-platform.io/nvidia-driver": "535.288.01",
    "gpu-platform.io/cuda": "12.2",
}


def stack() -> list[PlannedResource]:
    """The pool the pods land on, and their namespace, which ends GPU pods idle for an hour."""
    node_group = eks_node_group()
    node_group.inputs["labels"].update(POOL_LABELS)
    team = namespace()
    team.inputs["metadata"]["labels"]["gpu-platform.io/gpu-idle-minutes"] = "60"
    return [node_group, team]


@dataclass(frozen=True)
class Element:
    """One container or pod template of a resource: where it is, and what names it in the
    messages and notes of the checks that read it."""

    path: FieldPath
    markers: tuple[str, ...]


def bad_container(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"registry.example.com/{name}:latest",
        "env": [{"name": "CUDA_VERSION", "value": "13.0.1"}],
        "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }


def three_containers() -> tuple[PlannedResource, list[Element]]:
    spec = gpu_pod_spec()
    spec["nodeSelector"] = {"gpu-platform.io/pool": "l4"}
    names = ("app", "sidecar", "tools")
    spec["containers"] = [bad_container(name) for name in names]
    elements = [
        Element(
            ("spec", "template", "spec", "containers", index),
            (f"spec.template.spec.containers[{index}]", f'container "{name}"'),
        )
        for index, name in enumerate(names)
    ]
    return workload("Deployment", spec, name="three-containers"), elements


def bad_template(index: int) -> dict[str, Any]:
    """A GPU pod template asking for 9 + index MIG slices (8 allowed), none of the GPU nodes'
    labels or tolerations, on `:latest`."""
    spec = gpu_pod_spec()
    del spec["nodeSelector"], spec["tolerations"]
    container = spec["containers"][0]
    container["name"] = f"train-{index}"
    container["image"] = f"registry.example.com/train-{index}:latest"
    container["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": str(9 + index)}}
    return {"metadata": {}, "spec": spec}


def _job(index: int) -> dict[str, Any]:
    return {"name": f"job-{index}", "template": {"spec": {"template": bad_template(index)}}}


# Each kind: its type, its spec from the templates' builder, and where each template is in the
# spec (in the upstream CRD types cited in test_gpu_workload_crds.py's CARRIERS).
CRDS: dict[str, tuple[str, Callable[[Callable[[int], Any]], dict[str, Any]], list[FieldPath]]] = {
    "PyTorchJob": (
        "kubernetes:kubeflow.org/v1:PyTorchJob",
        lambda t: {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": t(0)},
                "Worker": {"replicas": 3, "template": t(1)},
            }
        },
        [
            ("pytorchReplicaSpecs", "Master", "template"),
            ("pytorchReplicaSpecs", "Worker", "template"),
        ],
    ),
    "RayCluster": (
        "kubernetes:ray.io/v1:RayCluster",
        lambda t: {
            "headGroupSpec": {"template": t(0)},
            "workerGroupSpecs": [
                {"groupName": "small", "template": t(1)},
                {"groupName": "large", "template": t(2)},
            ],
        },
        [
            ("headGroupSpec", "template"),
            ("workerGroupSpecs", 0, "template"),
            ("workerGroupSpecs", 1, "template"),
        ],
    ),
    "TrainingRuntime": (
        "kubernetes:trainer.kubeflow.org/v1alpha1:TrainingRuntime",
        lambda t: {
            "mlPolicy": {"numNodes": 2, "torch": {}},
            "template": {"spec": {"replicatedJobs": [_job(0), _job(1)]}},
        },
        [
            ("template", "spec", "replicatedJobs", index, "template", "spec", "template")
            for index in (0, 1)
        ],
    ),
    "JobSet": (
        "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
        lambda t: {"replicatedJobs": [_job(0), _job(1)]},
        [("replicatedJobs", index, "template", "spec", "template") for index in (0, 1)],
    ),
    "LeaderWorkerSet": (
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        lambda t: {"leaderWorkerTemplate": {"leaderTemplate": t(0), "workerTemplate": t(1)}},
        [("leaderWorkerTemplate", "leaderTemplate"), ("leaderWorkerTemplate", "workerTemplate")],
    ),
}


def _dotted(path: FieldPath) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)[1:]


def crd(kind: str) -> tuple[PlannedResource, list[Element]]:
    type_, spec_of, paths = CRDS[kind]
    inputs = {"metadata": {"name": "train", "namespace": "team-a"}, "spec": spec_of(bad_template)}
    elements = [Element(("spec", *path), (_dotted(("spec", *path)),)) for path in paths]
    return resource(type_, kind.lower(), inputs), elements


@dataclass(frozen=True)
class Case:
    build: Callable[[], tuple[PlannedResource, list[Element]]]
    policies: tuple[str, ...]
    """The policies that refuse each element."""
    pod_policies: tuple[str, ...] = ()
    """The policies that refuse the pod as a whole."""


CORPUS = {
    "Deployment": Case(three_containers, CONTAINER_POLICIES, ("gpu-pods-declare-max-idle",)),
    **{kind: Case(partial(crd, kind), TEMPLATE_POLICIES) for kind in CRDS},
}


def config(case: Case) -> dict[str, Any]:
    # Only the policies under test, so that the variants stay quick to analyze.
    policies = dict.fromkeys((*case.policies, *case.pod_policies), "mandatory")
    return {"all": "disabled", DEFERRED: "advisory", **policies}


def variant(original: PlannedResource, name: str, path: FieldPath) -> PlannedResource:
    """`original`, named `name`, with the unknown value at `path`."""
    return resource(original.type, name, with_unknown(original.inputs, path))


def found(verdicts: list[Any]) -> dict[str, list[tuple[str, str]]]:
    """The (policy, message) violations of each resource, by name."""
    by_name: dict[str, list[tuple[str, str]]] = {}
    for verdict in violations(verdicts):
        if verdict.policy_name != DEFERRED:
            name = verdict.urn.rsplit("::", 1)[1]
            by_name.setdefault(name, []).append((verdict.policy_name, verdict.message))
    return by_name


def within(element: Element, resource_: PlannedResource) -> Iterator[FieldPath]:
    value: Any = resource_.inputs
    for step in element.path:
        value = value[step]
    return fields(value, element.path)


def of(element: Element, message: str) -> bool:
    return any(marker in message for marker in element.markers)


@pytest.mark.parametrize("kind", CORPUS)
def test_an_unknown_field_of_one_element_hides_no_verdict_on_the_others(
    analyze: Analyze, kind: str
) -> None:
    case = CORPUS[kind]
    original, elements = case.build()
    variants = {
        name: (element, variant(original, name, path))
        for e, element in enumerate(elements)
        for f, path in enumerate(within(element, original))
        for name in [f"{original.name}-{e}-{f}"]
    }

    planned = (planned for _, planned in variants.values())
    by_name = found(analyze(*stack(), original, *planned, config=config(case)))

    before = by_name[original.name]
    for element in elements:
        refused_by = {policy for policy, message in before if of(element, message)}
        assert refused_by == set(case.policies), f"each policy refuses each element of {kind}"
    assert {p for p, m in before if not any(of(e, m) for e in elements)} == set(case.pod_policies)
    lost = {
        name: [
            (policy, message)
            for policy, message in before
            if not of(element, message) and (policy, message) not in by_name.get(name, [])
        ]
        for name, (element, _) in variants.items()
    }
    assert {name: missing for name, missing in lost.items() if missing} == {}


ELEMENTS = [(kind, index) for kind, case in CORPUS.items() for index in range(len(case.build()[1]))]


@pytest.mark.parametrize(("kind", "index"), ELEMENTS)
def test_a_whole_element_not_known_is_reported_deferred_by_each_policy_that_judges_it(
    analyze: Analyze, kind: str, index: int
) -> None:
    case = CORPUS[kind]
    original, elements = case.build()
    unknown = elements[index]
    planned = variant(original, original.name, unknown.path)

    verdicts = analyze(*stack(), planned, config=config(case))

    reported = found(verdicts).get(original.name, [])
    others = [e for e in elements if e != unknown]
    assert {p for p, m in reported if any(of(e, m) for e in others)} == set(case.policies)
    assert [m for _, m in reported if of(unknown, m)] == []
    deferred = {
        policy
        for policy in case.policies
        for verdict in verdicts
        if (verdict.policy_name, verdict.urn) == (DEFERRED, planned.urn)
        and verdict.message.startswith(f'policy "{policy}" could not check this at preview')
        and unknown.markers[0] in verdict.message
    }
    assert deferred == set(case.policies)

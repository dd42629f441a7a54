"""Argo `resource` templates: the objects a workflow's step creates or changes with kubectl are
judged as the pack judges them declared on their own, and a step whose objects cannot be read
before it runs is refused.

argoproj/argo-workflows v4.1.2: pkg/apis/workflow/v1alpha1/workflow_types.go, ResourceTemplate
(`action`: get, create, apply, delete, replace, patch; `mergeStrategy`, strategic by default;
`manifest`; `manifestFrom`, an input artifact; `flags`), and workflow/executor/resource.go,
getKubectlArguments: `kubectl <action> <flags> -f <manifest> -o json`, the manifest written as
given (workflow/executor/executor.go, StageFiles), so that kubectl creates every document of it.
"""

from typing import Any

import pytest
import yaml

from tests.gpu_platform.policy_pack.builders import (
    UNKNOWN,
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    resource,
    restricted_pod_spec,
)

POD_SECURITY = "pod-security-standards"
MAX_GPUS = "gpu-pods-max-gpus"
RESTRICTED = '[Pod Security restricted v1.35, from namespace "team-a"]'


def privileged_pod() -> dict[str, Any]:
    spec = restricted_pod_spec()
    spec["containers"][0]["securityContext"]["privileged"] = True
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": spec}


def gpu_job(gpus: str) -> dict[str, Any]:
    template = {"metadata": {}, "spec": {**gpu_pod_spec(gpus), "restartPolicy": "Never"}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {"template": template},
    }


def step(action: str, *documents: dict[str, Any], **fields: Any) -> dict[str, Any]:
    manifest = yaml.safe_dump_all(documents) if documents else None
    own = {"action": action, **({"manifest": manifest} if manifest else {}), **fields}
    return {"name": "make", "resource": own}


def argo(kind: str, *templates: dict[str, Any], ns: str = "team-a") -> Any:
    spec = {"entrypoint": "make", "templates": list(templates)}
    inputs = {"metadata": {"name": "make", "namespace": ns}, "spec": spec}
    return resource(f"kubernetes:argoproj.io/v1alpha1:{kind}", "make", inputs)


@pytest.mark.parametrize("kind", ["Workflow", "WorkflowTemplate"])
def test_a_step_creating_a_privileged_pod_is_refused(analyze: Analyze, kind: str) -> None:
    verdicts = analyze(namespace(), argo(kind, step("create", privileged_pod())))

    (privileged,) = messages(verdicts, POD_SECURITY)
    assert privileged.startswith(
        'privileged: container "app" sets '
        "spec.templates[0].resource.manifest[0].spec.containers[0].securityContext"
        ".privileged=true."
    )


def test_a_steps_job_asking_more_gpus_than_allowed_is_refused_in_any_document(
    analyze: Analyze,
) -> None:
    # kubectl creates each document of the file: the ConfigMap, then the Job.
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    template = argo("WorkflowTemplate", step("apply", config_map, gpu_job("64")))

    verdicts = analyze(namespace(), template)

    assert messages(verdicts, MAX_GPUS) == [
        "the pod (spec.templates[0].resource.manifest[1].spec.template.spec) asks for 64 GPUs, "
        "more than the 8 allowed per pod (maxGpusPerPod). Fix: ask for at most 8, or raise "
        "maxGpusPerPod if a node really has that many."
    ]


def test_a_typed_list_is_judged_item_by_item(analyze: Analyze) -> None:
    # Any document with `items` is a list to kubectl, whatever its kind, and an item with
    # neither kind nor apiVersion takes the list's kind without `List`: a PodList's items are
    # Pods (apimachinery pkg/apis/meta/v1/unstructured/unstructured.go, decode and decodeToList).
    pod = privileged_pod()
    del pod["apiVersion"], pod["kind"]
    pods = {"apiVersion": "v1", "kind": "PodList", "items": [pod]}

    verdicts = analyze(namespace(), argo("Workflow", step("create", pods)))

    (privileged,) = messages(verdicts, POD_SECURITY)
    assert privileged.startswith(
        'privileged: container "app" sets '
        "spec.templates[0].resource.manifest[0].items[0].spec.containers[0].securityContext"
        ".privileged=true."
    )


def test_a_step_creating_a_clean_gpu_job_passes(analyze: Analyze) -> None:
    verdicts = analyze(namespace(), argo("Workflow", step("create", gpu_job("1"))))

    assert [v.message for v in verdicts if v.mandatory] == []


def test_an_object_is_judged_in_the_namespace_it_names(analyze: Analyze) -> None:
    # A manifest without a namespace lands in the workflow's (kubectl runs in its pod); one
    # with a namespace of its own, there.
    pod = privileged_pod()
    pod["metadata"]["namespace"] = "team-a"
    lab = namespace("lab", level="privileged")

    verdicts = analyze(namespace(), lab, argo("Workflow", step("create", pod), ns="lab"))

    assert [m.rsplit(" [", 1)[1] for m in messages(verdicts, POD_SECURITY)] == [RESTRICTED[1:]]
    del pod["metadata"]["namespace"]
    in_lab = argo("Workflow", step("create", pod), ns="lab")
    assert messages(analyze(namespace(), lab, in_lab), POD_SECURITY) == []


def test_a_steps_patch_is_judged_as_a_patch(analyze: Analyze) -> None:
    # `kubectl patch --type strategic --patch-file <manifest> -f <manifest>`: the object the
    # manifest names, patched with what it sets.
    patch = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve"},
        "spec": {"template": {"spec": {"containers": [gpu_pod_spec("64")["containers"][0]]}}},
    }

    verdicts = analyze(namespace(), argo("Workflow", step("patch", patch)))

    (too_many,) = messages(verdicts, MAX_GPUS)
    assert too_many.startswith(
        "the pod (spec.templates[0].resource.manifest[0].spec.template.spec) asks for 64 GPUs"
    )
    # What the Deployment holds (its security contexts) is not the patch's to set.
    assert messages(verdicts, POD_SECURITY) == []


@pytest.mark.parametrize("action", ["get", "delete"])
def test_a_step_that_reads_or_deletes_is_left_alone(analyze: Analyze, action: str) -> None:
    verdicts = analyze(namespace(), argo("Workflow", step(action, privileged_pod())))

    assert messages(verdicts, POD_SECURITY) == []


UNREAD = {
    "an expression": (
        step("create", manifest="apiVersion: v1\nkind: Pod\nspec: {{inputs.parameters.spec}}\n"),
        "holds {{...}} expressions in its manifest or flags",
    ),
    "an artifact": (
        step("create", manifestFrom={"artifact": {"name": "pod"}}),
        "creates the objects of an artifact (`manifestFrom`), which exists only when the step "
        "runs, so no policy sees them. Fix: write them in `manifest`, literally",
    ),
    "a JSON patch": (
        step(
            "patch",
            mergeStrategy="json",
            flags=["deployment", "serve"],
            manifest='[{"op": "add", "path": "/spec/hostNetwork", "value": true}]',
        ),
        "is a JSON patch (`mergeStrategy: json`) of an object its flags name",
    ),
    "files of its flags": (
        step("apply", gpu_job("1"), flags=["-f", "https://example.com/pod.yaml"]),
        "names files of its own in its flags (-f, -k)",
    ),
}


@pytest.mark.parametrize("case", UNREAD)
def test_a_step_whose_objects_cannot_be_read_is_refused(analyze: Analyze, case: str) -> None:
    template, why = UNREAD[case]

    (refused,) = messages(analyze(namespace(), argo("Workflow", template)), POD_SECURITY)

    assert refused.startswith(f"spec.templates[0].resource {why}")
    # Where it lands is not known either: the stack's default level decides.
    assert refused.endswith(
        "[Pod Security restricted v1.37, the default, as the namespace is not known]"
    )


def test_a_manifest_not_known_yet_is_judged_at_pulumi_up(analyze: Analyze, new_notes: Any) -> None:
    # At preview: what it creates is known once the value is, unlike an expression.
    template = step("create", manifest=UNKNOWN)

    verdicts = analyze(namespace(), argo("Workflow", template))

    assert messages(verdicts, POD_SECURITY) == []
    assert any("spec.templates[0].resource" in note for note in new_notes())


def test_a_step_with_no_manifest_creates_nothing(analyze: Analyze) -> None:
    # workflow/validate/validate.go: a `create` without `manifest` or `manifestFrom` is
    # refused with the workflow, before any step runs.
    assert messages(analyze(namespace(), argo("Workflow", step("create"))), POD_SECURITY) == []

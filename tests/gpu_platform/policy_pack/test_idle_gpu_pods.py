"""The stack policy that has GPU pods running until stopped, in a namespace that ends idle GPU
pods, say how long they may sit idle; through the analyzer."""

from dataclasses import replace
from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
    UNKNOWN,
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    restricted_pod_spec,
    workload,
)

POLICY = "gpu-pods-declare-max-idle"
ANNOTATION = "gpu-platform.io/max-idle-minutes"
LIMIT_LABEL = "gpu-platform.io/gpu-idle-minutes"


def ending_idle_pods(minutes: str = "60", name: str = "team-a") -> Any:
    ns = namespace(name)
    ns.inputs["metadata"]["labels"][LIMIT_LABEL] = minutes
    return ns


def gpu_workload(kind: str = "StatefulSet", max_idle: str | None = None, **kwargs: Any) -> Any:
    annotations = {ANNOTATION: max_idle} if max_idle is not None else {}
    return workload(kind, gpu_pod_spec(), pod_metadata={"annotations": annotations}, **kwargs)


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "StatefulSet", "ReplicaSet"])
def test_a_gpu_pod_running_until_stopped_without_the_annotation_is_refused(
    analyze: Analyze, kind: str
) -> None:
    resource = gpu_workload(kind)

    verdicts = analyze(ending_idle_pods(), resource)

    (verdict,) = [v for v in verdicts if v.policy_name == POLICY]
    assert (verdict.enforcement_level, verdict.urn) == ("mandatory", resource.urn)


def test_the_message_names_the_field_the_namespace_and_the_fix(analyze: Analyze) -> None:
    verdicts = analyze(ending_idle_pods(), gpu_workload("StatefulSet"))

    assert messages(verdicts, POLICY) == [
        'the GPU pod runs until stopped in namespace "team-a", where GPU pods idle for 60 '
        "minutes are ended (gpu-platform.io/gpu-idle-minutes), and does not say how long it "
        'may sit idle: spec.template.metadata.annotations["gpu-platform.io/max-idle-minutes"] '
        'is missing. Fix: set it to a whole number of minutes from 15 to 60, such as "60"; '
        "once its GPUs have done no work for that long, the platform deletes the pod, or scales "
        "its Deployment, StatefulSet or ReplicaSet to 0."
    ]


@pytest.mark.parametrize("minutes", ["15", "30", "60"])
def test_a_limit_from_fifteen_minutes_to_the_namespaces_passes(
    analyze: Analyze, minutes: str
) -> None:
    verdicts = analyze(ending_idle_pods(), gpu_workload(max_idle=minutes))

    assert messages(verdicts, POLICY) == []


@pytest.mark.parametrize("minutes", ["61", "14", "0", "30m", "1.5", ""])
def test_a_limit_outside_the_namespaces_range_is_refused(analyze: Analyze, minutes: str) -> None:
    verdicts = analyze(ending_idle_pods(), gpu_workload(max_idle=minutes))

    assert messages(verdicts, POLICY) == [
        f'spec.template.metadata.annotations["gpu-platform.io/max-idle-minutes"]="{minutes}" '
        'is not a whole number of minutes from 15 to 60, the range namespace "team-a", where '
        "GPU pods idle for 60 minutes are ended (gpu-platform.io/gpu-idle-minutes) allows. Fix: "
        'set it to a value in that range, as a string such as "60".'
    ]


def test_a_bare_pod_reads_the_annotation_from_its_own_metadata(analyze: Analyze) -> None:
    verdicts = analyze(ending_idle_pods(), gpu_workload("Pod", max_idle="30"))

    assert messages(verdicts, POLICY) == []


@pytest.mark.parametrize("kind", ["Job", "CronJob"])
def test_a_job_is_not_held_to_it(analyze: Analyze, kind: str) -> None:
    spec = gpu_pod_spec()
    spec["restartPolicy"] = "Never"

    verdicts = analyze(ending_idle_pods(), workload(kind, spec))

    assert messages(verdicts, POLICY) == []


@pytest.mark.parametrize("restart_policy", ["Never", "OnFailure"])
def test_a_bare_pod_that_runs_to_completion_is_not_held_to_it(
    analyze: Analyze, restart_policy: str
) -> None:
    spec = gpu_pod_spec()
    spec["restartPolicy"] = restart_policy

    verdicts = analyze(ending_idle_pods(), workload("Pod", spec))

    assert messages(verdicts, POLICY) == []


def test_a_pod_that_restarts_always_is_held_to_it(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["restartPolicy"] = "Always"

    verdicts = analyze(ending_idle_pods(), workload("Pod", spec))

    assert len(messages(verdicts, POLICY)) == 1


def test_a_pod_without_gpus_is_not_held_to_it(analyze: Analyze) -> None:
    verdicts = analyze(ending_idle_pods(), workload("Deployment", restricted_pod_spec()))

    assert messages(verdicts, POLICY) == []


def test_a_namespace_that_does_not_end_idle_pods_asks_nothing(analyze: Analyze) -> None:
    verdicts = analyze(namespace("team-a"), gpu_workload())

    assert messages(verdicts, POLICY) == []


def test_a_namespace_the_stack_does_not_declare_asks_nothing(analyze: Analyze) -> None:
    verdicts = analyze(ending_idle_pods(name="team-b"), gpu_workload())

    assert messages(verdicts, POLICY) == []


def test_the_namespaces_own_limit_bounds_the_annotation(analyze: Analyze) -> None:
    verdicts = analyze(ending_idle_pods("120"), gpu_workload(max_idle="90"))

    assert messages(verdicts, POLICY) == []


def test_a_malformed_namespace_limit_is_refused_on_the_namespace(analyze: Analyze) -> None:
    ns = ending_idle_pods("an hour")

    verdicts = analyze(ns, gpu_workload())

    assert [(v.urn, v.message) for v in verdicts if v.policy_name == POLICY] == [
        (
            ns.urn,
            'metadata.labels["gpu-platform.io/gpu-idle-minutes"]="an hour" is not a whole '
            "number of minutes from 15, so no GPU pod in the namespace can say how long it may "
            'sit idle. Fix: set it as a whole number of minutes, such as "60" (the namespace\'s '
            "gpuIdleMinutes), or remove it.",
        )
    ]


def test_an_annotation_not_known_at_preview_is_skipped_not_refused(analyze: Analyze) -> None:
    verdicts = analyze(ending_idle_pods(), gpu_workload(max_idle=UNKNOWN))

    assert messages(verdicts, POLICY) == []


def test_a_patch_is_not_held_to_it(analyze: Analyze) -> None:
    # A patch's pod lacks what the object it patches already has, annotations included.
    patch = replace(gpu_workload("StatefulSet"), type="kubernetes:apps/v1:StatefulSetPatch")

    verdicts = analyze(ending_idle_pods(), patch)

    assert messages(verdicts, POLICY) == []

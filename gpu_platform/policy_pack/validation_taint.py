"""Only the platform's pods tolerate the node validation taint.

A GPU node of a validated pool joins with the taint
`startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation=pending:NoSchedule`, and
keeps it until its validation passed (docs/node-validation.md). A tenant's pod that tolerates it
could start on a node that is still being proven, or that failed and was left tainted for that
reason. So a pod outside the namespaces the platform's own pods run in (`exemptNamespaces`, the
setting the Pod Security policies read) must not tolerate it: neither by its key nor with an empty
key and `operator: Exists`, which tolerates every taint. Matching follows Kubernetes
(k8s.io/api core/v1 toleration.go, `ToleratesTaint`): an empty effect matches every effect, an
empty operator is `Equal`, which compares the value too.
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


def tolerates_validation_taint(toleration: Any) -> bool:
    effect = value_at(toleration, "effect")
    if effect not in (None, "", TAINT_EFFECT):
        return False
    key = value_at(toleration, "key")
    if (value_at(toleration, "operator") or "Equal") == "Exists":
        return key in (None, "", TAINT_KEY)
    return key == TAINT_KEY and (value_at(toleration, "value") or "") == TAINT_VALUE


def _problems(pod: Pod) -> Iterator[str]:
    for i, toleration in enumerate(elements(pod.spec, "tolerations")):
        if tolerates_validation_taint(toleration):
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
    "Pods outside the platform's namespaces do not tolerate the node validation taint, by its key "
    "or by tolerating every taint.",
    validation_taint_problems,
    EXEMPT_NAMESPACES,
)
POLICIES = [POLICY]

"""Patches of the kinds the pack judges as whole objects: Namespaces (their Pod Security labels)
and Karpenter's NodePools and EC2NodeClasses.

Those policies pick a resource by its exact type (`kubernetes:core/v1:Namespace`,
`kubernetes:karpenter.sh/v1:NodePool`, `kubernetes:karpenter.k8s.aws/v1:EC2NodeClass`), and a
server-side apply patch of one is a type of its own, `<kind>Patch` (pulumi-kubernetes v4.32.0
provider/pkg/kinds/util.go, `IsPatchResource`; the SDK's `core.v1.NamespacePatch` and
`CustomResourcePatch`), merged into an object the stack may not hold. The patch's fields alone
cannot show what the merged object does, so:

- a NamespacePatch that sets a label the pack reads from Namespaces is refused: a
  `pod-security.kubernetes.io/` label changes the level at which the cluster's Pod Security
  admission judges every pod of the namespace, the fallback for all the pack cannot see, and
  the idle limit (`idle_gpu_pods.LIMIT_LABEL`) how long its GPU pods may sit idle; the pack
  judges pods against the values the stack's Namespaces declare, not the patched ones. Any
  other label or annotation passes.
- a NodePoolPatch or EC2NodeClassPatch is refused whatever it sets: the platform declares its
  pools whole and never patches them (gpu_platform/eks/karpenter/node_pool.py), and the rules
  on them (taints, limits, disruption, a pinned AMI, IMDSv2, encrypted volumes) are of the
  merged object. A field the platform leaves unset (an EC2NodeClass's `userData`, run as root on
  every new node) merges without conflict, and one it sets is overridden where the patch carries
  `pulumi.com/patchForce` (v4.32.0 provider/pkg/metadata/annotations.go). The patch may also be
  of a tenant's CPU pool, which GPU instance types added by the patch make a GPU pool no rule
  judged.

Every version of those groups is matched: an older served version (`karpenter.sh/v1beta1`) is
the same object to the API server.
"""

from collections.abc import Iterator

from checks import resource_policy
from idle_gpu_pods import LIMIT_LABEL
from pod_security import LABEL_PREFIX
from props import keys, shown, text
from pulumi_policy import ResourceValidationArgs
from type_tokens import kubernetes_type

NAME = "judged-kind-patches"
NAMESPACE = ("core", "Namespace")
KARPENTER_KINDS = (("karpenter.sh", "NodePool"), ("karpenter.k8s.aws", "EC2NodeClass"))


def _patched(resource_type: str) -> tuple[str, str] | None:
    """(group, kind) a patch type patches, of the kinds above; None for any other type."""
    found = kubernetes_type(resource_type)
    if found is None or not found.is_patch:
        return None
    key = (found.group, found.patched_kind)
    return key if key == NAMESPACE or key in KARPENTER_KINDS else None


def applies(args: ResourceValidationArgs) -> bool:
    return _patched(args.resource_type) is not None


def patch_problems(args: ResourceValidationArgs) -> Iterator[str]:
    patched = _patched(args.resource_type)
    name = shown(text(args.props, "metadata", "name"))
    if patched == NAMESPACE:
        labels = sorted(
            key
            for key in keys(args.props, "metadata", "labels")
            if key.startswith(LABEL_PREFIX) or key == LIMIT_LABEL
        )
        if labels:
            yield (
                f"NamespacePatch {name} sets {', '.join(labels)}: it changes the Pod Security "
                "level or the GPU idle limit the cluster holds every pod of the namespace to, "
                "which no policy judges on a patch. Fix: declare the Namespace in the stack "
                "with its labels (namespace-pod-security and gpu-pods-declare-max-idle judge "
                "them), or leave those labels out of the patch."
            )
    elif patched is not None:
        kind = patched[1]
        yield (
            f"{kind}Patch {name} changes a Karpenter {kind} in place, which the pack judges only "
            f"as a whole object: the merged {kind} may drop the GPU taint, limits, disruption "
            "budgets, pinned AMI or IMDSv2 the karpenter-gpu-* policies require, or turn a CPU "
            f"pool into a GPU pool. Fix: change the platform's pools through the stack's config "
            f"(pools), or declare your own {kind} whole."
        )


POLICIES = [
    resource_policy(
        NAME,
        "No patch of a Namespace's Pod Security labels or GPU idle limit label, of a Karpenter "
        "NodePool or of an EC2NodeClass: the pack judges those kinds only as whole objects.",
        patch_problems,
        applies=applies,
    ),
]

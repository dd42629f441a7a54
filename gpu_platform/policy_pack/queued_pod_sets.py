"""A GPU job of several pod sets in a queued namespace whose quota pools split selects one pool
in every pod set.

Where a tenant's ClusterQueue holds a GPU resource on two or more flavors (the namespace's
`queue.poolQuotas`, gpu_platform/kubernetes/kueue.py), Kueue chooses a flavor for each pod set
of a workload apart (`assignFlavors`, pkg/scheduler/flavorassigner/flavorassigner.go at
v0.19.2): a PyTorchJob's master may go to one pool and its workers to another, and NCCL then
runs across GPU models and node groups. Kueue considers for a pod set only the flavors whose
node labels its node selector and required node affinity match (`flavorSelector`, same file),
so pod sets that all select one pool by `gpu-platform.io/pool` stay together.

Judged: the kinds Kueue queues (`kueue_integrations.managed`), not the workloads it leaves
alone, which `gpu-workloads-name-their-queue` refuses in a queued namespace, nor the templates
other objects run; only the pod sets asking for a resource the queue splits; and a split only
over the flavors that can take a pod set (a share of 0 without borrowing takes none). Pod sets
that each select a single pool are passed, even different ones: that is the team's choice made
explicit. Advisory: a job that tolerates being split is the team's call.
"""

from collections.abc import Iterator, Mapping, Sequence
from functools import partial

from checks import Findings
from gpu_sharing import POOL_LABEL, selected_pools
from gpu_workloads import gpu_resources, is_gpu_pod, quantity
from kueue_integrations import managed
from pod_security import NAMESPACE_TYPE, namespace_resource
from pods import pods_of
from props import elements, text, value_at
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)
from queued_workloads import group_and_kind

NAME = "queued-gpu-jobs-select-one-pool"
CLUSTER_QUEUE_TYPE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


def _may_admit(quota: Mapping[str, object]) -> bool:
    """Whether a flavor's quota of a resource may take a pod set: a share, or borrowing
    (`borrowingLimit` absent is unlimited, apis/kueue/v1beta2/clusterqueue_types.go at
    v0.19.2); a value not known yet may."""
    borrowing = value_at(quota, "borrowingLimit")
    return (
        quantity(value_at(quota, "nominalQuota")) != 0
        or borrowing is None
        or quantity(borrowing) != 0
    )


def split_pools(resources: Sequence[PolicyResource]) -> dict[str, dict[str, list[str]]]:
    """Each namespace whose ClusterQueue may admit a resource on two or more flavors, with each
    such resource and those flavors (each named as its pool)."""
    found: dict[str, dict[str, list[str]]] = {}
    for queue in (r for r in resources if r.resource_type == CLUSTER_QUEUE_TYPE):
        selector = ("spec", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
        namespace = text(queue.props, *selector)
        split: dict[str, list[str]] = {}
        for group in elements(queue.props, "spec", "resourceGroups"):
            for flavor in elements(group, "flavors"):
                for quota in elements(flavor, "resources"):
                    if _may_admit(quota):
                        pools = split.setdefault(str(text(quota, "name")), [])
                        pools.append(str(text(flavor, "name")))
        split = {resource: pools for resource, pools in split.items() if len(pools) > 1}
        if namespace is not None and split:
            found[namespace] = split
    return found


def pool_problems(
    resource: PolicyResource, namespace: str, split: Mapping[str, list[str]]
) -> Iterator[str]:
    gpu_pods = [
        p
        for p in pods_of(resource.resource_type, resource.props)
        if is_gpu_pod(p) and gpu_resources(p) & split.keys()
    ]
    chosen: Mapping[str, tuple[str, ...]] = {p.label: selected_pools(p) for p in gpu_pods}
    if len(chosen) < 2 or all(len(pools) == 1 for pools in chosen.values()):
        return
    asked = sorted({name for p in gpu_pods for name in gpu_resources(p) & split.keys()})
    pools = list(dict.fromkeys(pool for name in asked for pool in split[name]))
    shown = "; ".join(f"{where}: {', '.join(s) or 'any'}" for where, s in chosen.items())
    yield (
        f'the job runs its GPU pod sets in namespace "{namespace}", whose queue splits its quota'
        f" of {', '.join(asked)} between pools {', '.join(pools)}, and they do not each select"
        f" one pool ({shown}): Kueue puts each pod set on a pool apart, so the job may run"
        f" across pools. Fix: set nodeSelector {POOL_LABEL}: <pool> on every GPU pod set, the"
        " same pool for pod sets that run together (docs/queues.md)."
    )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    split = split_pools(args.resources)
    if not split:
        return
    namespaces = [r for r in args.resources if r.resource_type == NAMESPACE_TYPE]
    with Findings(NAME, "the stack", report_violation) as findings:
        for resource in args.resources:
            if not managed(*group_and_kind(resource)):
                continue
            if len(pods_of(resource.resource_type, resource.props)) < 2:
                continue
            found = findings.known(
                f"the namespace of {resource.urn}",
                partial(namespace_resource, resource, namespaces),
                resource.urn,
            )
            if found is None or found[0] not in split:
                continue
            findings.check(
                f"the pools of {resource.urn}",
                partial(pool_problems, resource, found[0], split[found[0]]),
                resource.urn,
            )


POLICIES = [
    StackValidationPolicy(
        name=NAME,
        description="Every GPU pod set of a job Kueue queues in a namespace whose queue splits "
        f"its quota between pools selects one pool ({POOL_LABEL}).",
        validate=validate,
        enforcement_level=EnforcementLevel.ADVISORY,
    )
]

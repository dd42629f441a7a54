"""A GPU job of several pod sets in a queued namespace whose quota pools split selects one pool
in every pod set.

Where a tenant's ClusterQueue holds a GPU resource on two or more flavors (the namespace's
`queue.poolQuotas`, gpu_platform/kubernetes/kueue.py), Kueue chooses a flavor for each pod set
of a workload apart (`assignFlavors`, pkg/scheduler/flavorassigner/flavorassigner.go at
v0.19.2): a PyTorchJob's master may go to one pool and its workers to another, and NCCL then
runs across GPU models and node groups. Kueue considers for a pod set only the flavors whose
node labels its node selector and required node affinity match (`flavorSelector`, same file),
so pod sets that all select one pool by `gpu-platform.io/pool` stay together. Advisory: a job
that tolerates being split, or runs its GPU pod sets apart, is the team's call.
"""

from collections.abc import Iterator, Mapping, Sequence
from functools import partial

from checks import Findings
from gpu_sharing import POOL_LABEL, selected_pools
from gpu_workloads import is_gpu_pod
from pod_security import NAMESPACE_TYPE, namespace_resource
from pods import pods_of
from props import elements, text
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

NAME = "queued-gpu-jobs-select-one-pool"
CLUSTER_QUEUE_TYPE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


def split_pools(resources: Sequence[PolicyResource]) -> dict[str, list[str]]:
    """Each namespace whose ClusterQueue holds a resource on two or more flavors, with those
    flavors (each named as its pool)."""
    found: dict[str, list[str]] = {}
    for queue in (r for r in resources if r.resource_type == CLUSTER_QUEUE_TYPE):
        selector = ("spec", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
        namespace = text(queue.props, *selector)
        pools = [
            str(text(flavor, "name"))
            for group in elements(queue.props, "spec", "resourceGroups")
            if len(elements(group, "flavors")) > 1
            for flavor in elements(group, "flavors")
        ]
        if namespace is not None and pools:
            found[namespace] = pools
    return found


def pool_problems(resource: PolicyResource, namespace: str, pools: list[str]) -> Iterator[str]:
    gpu_pods = [p for p in pods_of(resource.resource_type, resource.props) if is_gpu_pod(p)]
    chosen: Mapping[str, tuple[str, ...]] = {p.label: selected_pools(p) for p in gpu_pods}
    selections = set(chosen.values())
    if len(chosen) < 2 or (len(selections) == 1 and len(selections.pop()) == 1):
        return
    shown = "; ".join(f"{where}: {', '.join(s) or 'any'}" for where, s in chosen.items())
    yield (
        f'the job runs its GPU pod sets in namespace "{namespace}", whose queue splits its quota'
        f" between pools {', '.join(pools)}, and they do not all select one pool ({shown}):"
        " Kueue puts each pod set on a pool apart, so the job may run across pools. Fix: set"
        f" nodeSelector {POOL_LABEL}: <pool> on every GPU pod set (docs/queues.md)."
    )


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    split = split_pools(args.resources)
    if not split:
        return
    namespaces = [r for r in args.resources if r.resource_type == NAMESPACE_TYPE]
    with Findings(NAME, "the stack", report_violation) as findings:
        for resource in args.resources:
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
        description="Every GPU pod set of a job in a namespace whose Kueue queue splits its quota "
        f"between pools selects one and the same pool ({POOL_LABEL}).",
        validate=validate,
        enforcement_level=EnforcementLevel.ADVISORY,
    )
]

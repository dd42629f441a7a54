"""What a plan warns of for a queued namespace whose quota pools split: shares adding up to less
than the quota, on which Kueue admits nothing though the namespace's ResourceQuota would allow it.

Read from what the program declared, not from the stack file, which holds no settings for a
program that builds its config in code (docs/library.md). Each tenant's ClusterQueue holds a
flavor per pool at the pool's share (`nominalQuota`), each with the tenant's `borrowingLimit`;
its ResourceQuota holds the quota plus that limit once per flavor
(gpu_platform/kubernetes/kueue.py `with_borrowing`).
"""

from typing import Any

from gpu_platform.kubernetes.kueue import API_VERSION
from gpu_platform.offline.program import Plan, PlannedResource

CLUSTER_QUEUE = f"kubernetes:{API_VERSION}:ClusterQueue"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"


def _hard(plan: Plan, namespace: str) -> dict[str, str]:
    return {
        key: value
        for quota in plan.of_type(RESOURCE_QUOTA)
        if (quota.inputs.get("metadata") or {}).get("namespace") == namespace
        for key, value in ((quota.inputs.get("spec") or {}).get("hard") or {}).items()
    }


def _namespace(queue: PlannedResource) -> Any:
    selector = (queue.inputs.get("spec") or {}).get("namespaceSelector") or {}
    return (selector.get("matchLabels") or {}).get("kubernetes.io/metadata.name")


def unused_shares(plan: Plan) -> list[str]:
    """A warning for each GPU resource of a tenant's ClusterQueue whose flavors' shares add up
    to less than the namespace's quota of it."""
    warnings = []
    for queue in plan.of_type(CLUSTER_QUEUE):
        namespace = _namespace(queue)
        hard = _hard(plan, namespace)
        for group in (queue.inputs.get("spec") or {}).get("resourceGroups") or []:
            for resource in group.get("coveredResources") or []:
                quotas = {
                    flavor["name"]: r
                    for flavor in group.get("flavors") or []
                    for r in flavor.get("resources") or []
                    if r.get("name") == resource
                }
                if len(quotas) < 2 or f"requests.{resource}" not in hard:
                    continue
                borrowing = sum(int(r.get("borrowingLimit") or 0) for r in quotas.values())
                cap = int(hard[f"requests.{resource}"]) - borrowing
                shares = [int(r["nominalQuota"]) for r in quotas.values()]
                if sum(shares) >= cap:
                    continue
                warnings.append(
                    f"namespace {namespace}: its queue's shares (queue.poolQuotas) of its quota"
                    f" of {resource} ({cap}) on pools {', '.join(quotas)} add up to"
                    f" {sum(shares)} ({' + '.join(map(str, shares))}): Kueue admits no job on"
                    f" the {cap - sum(shares)} left. Once the pool whose share you lowered runs"
                    " within it, raise the share of the pool that takes the rest"
                    " (docs/queues.md)."
                )
    return warnings

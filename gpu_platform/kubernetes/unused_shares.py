"""What the platform warns of for a queued namespace whose quota pools split: shares adding up to
less than the quota, on which Kueue admits nothing though the namespace's ResourceQuota would
allow it.

Read from the objects the namespace's component declares, so that a program that builds its
config in code is warned as a stack file's is (docs/library.md), and logged with
`pulumi.log.warn`, which `pulumi preview` and `up` show and `gpu-platform plan` collects. Each
tenant's ClusterQueue holds a flavor per pool at the pool's share (`nominalQuota`), each with
the tenant's `borrowingLimit`; its ResourceQuota holds the quota plus that limit once per
flavor (gpu_platform/kubernetes/kueue.py `with_borrowing`).
"""

from collections.abc import Mapping
from typing import Any


def unused_shares(
    namespace: str, cluster_queue: Mapping[str, Any], hard: Mapping[str, str]
) -> list[str]:
    """A warning for each GPU resource of the tenant's ClusterQueue whose flavors' shares add
    up to less than the namespace's quota of it (`hard`, its ResourceQuota's `spec.hard`)."""
    warnings = []
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
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

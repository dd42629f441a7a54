"""The order of creation and, reversed, of `pulumi destroy`: every Kubernetes object and every
GPU pool depends on the created cluster and its system node pool, so that the engine deletes
them first, while the nodes that run their finalizers' controllers still exist.

Pulumi deletes a resource only after every resource that depends on it (a dependency, a
property dependency, its provider, or a child of its parent's dependencies); the walk follows
exactly those edges of the plan.
"""

from collections.abc import Callable
from typing import Any

from gpu_platform.offline.program import Plan, PlannedResource

from .plans import NODE_POOL, SYSTEM_POOL, cluster, system_pool

Config = dict[str, Any]


def reaches(plan: Plan, start: PlannedResource, target: PlannedResource) -> bool:
    """Whether `start` depends on `target`, through dependencies, property dependencies,
    providers and the dependencies of its ancestors."""
    by_urn = {r.urn: r for r in plan.resources}
    seen: set[str] = set()
    stack = [start.urn]
    while stack:
        urn = stack.pop()
        if urn == target.urn:
            return True
        if urn in seen or urn not in by_urn:
            continue
        seen.add(urn)
        resource = by_urn[urn]
        stack += resource.dependencies
        stack += [d for deps in resource.property_dependencies.values() for d in deps]
        if resource.provider:
            # A provider reference is `<urn>::<id>`.
            stack.append(resource.provider.rsplit("::", 1)[0])
        if resource.parent:
            stack.append(resource.parent)
    return False


def kubernetes_objects(plan: Plan) -> list[PlannedResource]:
    return [r for r in plan.resources if r.custom and r.type.startswith("kubernetes:")]


def test_every_kubernetes_object_depends_on_the_cluster_and_system_nodes(
    gke_new_plan: Plan,
) -> None:
    created, system = cluster(gke_new_plan), system_pool(gke_new_plan)
    objects = kubernetes_objects(gke_new_plan)

    assert len(objects) >= 5
    assert [o.name for o in objects if not reaches(gke_new_plan, o, created)] == []
    assert [o.name for o in objects if not reaches(gke_new_plan, o, system)] == []


def test_every_gpu_pool_depends_on_the_cluster_and_system_nodes(gke_new_plan: Plan) -> None:
    created, system = cluster(gke_new_plan), system_pool(gke_new_plan)
    pools = [p for p in gke_new_plan.of_type(NODE_POOL) if p.name != SYSTEM_POOL]

    assert pools
    assert all(created.urn in p.dependencies and system.urn in p.dependencies for p in pools)


def test_the_walk_does_not_find_a_dependency_that_is_not_there(gke_new_plan: Plan) -> None:
    # The system pool depends on the cluster, never the other way round.
    assert not reaches(gke_new_plan, cluster(gke_new_plan), system_pool(gke_new_plan))


def test_without_the_providers_wait_the_objects_would_not_depend_on_the_system_nodes(
    gke_new_config: Config, plan_for: Callable[[Config], Plan], monkeypatch: Any
) -> None:
    from gpu_platform.gke import new_cluster

    original = new_cluster.NewGkeCluster.__init__

    def without_ready(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.ready = []

    monkeypatch.setattr(new_cluster.NewGkeCluster, "__init__", without_ready)
    plan = plan_for(gke_new_config)

    objects = kubernetes_objects(plan)
    assert [o for o in objects if not reaches(plan, o, system_pool(plan))] == objects

"""`gpu-platform:protect` guards what costs an outage to lose: the GPU pools and the operator."""

import pytest

from gpu_platform_cli.offline import run_program


@pytest.fixture(scope="module")
def prod_plan():
    return run_program("prod")


def test_prod_protects_its_node_groups_and_their_parts(prod_plan) -> None:
    node_groups = prod_plan.of_type("aws:eks/nodeGroup:NodeGroup")

    assert node_groups and all(r.protect for r in node_groups)


def test_prod_protects_the_gpu_operator_namespace_and_release(prod_plan) -> None:
    operator = prod_plan.named("gpu-operator", "gpu-platform:kubernetes:GpuOperator")

    assert {r.type: r.protect for r in prod_plan.children_of(operator)} == {
        "kubernetes:core/v1:Namespace": True,
        "kubernetes:helm.sh/v3:Release": True,
    }


def test_tenant_namespaces_stay_unprotected(prod_plan) -> None:
    tenants = [
        r for r in prod_plan.of_type("kubernetes:core/v1:Namespace") if r.name.startswith("ml-")
    ]

    assert tenants and not any(r.protect for r in tenants)


@pytest.mark.parametrize("stack", ["dev", "gke-dev"])
def test_other_stacks_protect_nothing(stack: str) -> None:
    assert not any(r.protect for r in run_program(stack).resources)


def test_gke_pools_are_protected_when_asked(gke_config, plan_for) -> None:
    gke_config["gpu-platform:protect"] = True
    gke_config["gpu-platform:cluster"]["kubeconfigContext"] = "ml-dev"

    pools = plan_for(gke_config).of_type("gcp:container/nodePool:NodePool")

    assert pools and all(r.protect for r in pools)

"""On a cluster the platform creates (eks-new), every custom resource it applies has its CRD by
the time `pulumi up` applies it, installed by a Helm release of the same plan: a new EKS cluster
has no CRDs of these groups. The kinds each chart installs, with their upstream files:
tests/custom_resources.py.
"""

import pytest

from gpu_platform.offline.program import run_program
from tests.custom_resources import release_kinds, required_kinds
from tests.repository import PROJECT

from .test_new_cluster import eks_new, on_karpenter


@pytest.mark.parametrize("provisioner", ["cluster-autoscaler", "karpenter"])
def test_every_custom_resource_has_its_crd_installed_in_the_same_plan(provisioner: str) -> None:
    config = eks_new()
    if provisioner == "karpenter":
        on_karpenter(config)
    plan = run_program("eks-new", config=config, project=PROJECT)
    required = required_kinds(plan)

    assert ("monitoring.coreos.com", "PrometheusRule") in required
    assert required - release_kinds(plan) == set()

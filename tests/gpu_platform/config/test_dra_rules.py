"""Config validation of DRA pools (`allocation: dra`): refused by key where Kubernetes does not
serve DRA's GA API (resource.k8s.io/v1 from 1.34), where the provisioner cannot scale the pool
(Karpenter 1.14.1, GKE's autoscaler on the platform's node pools; the cluster autoscaler from
zero: gpu_platform/config/dra_rules.py cites the upstream files), and where a pod of the
platform's would ask for `nvidia.com/gpu` on nodes that advertise none."""

import copy
from typing import Any

import pytest

from gpu_platform.config import ConfigError, load_stack_config
from gpu_platform.offline.stand_ins import aws as stand_ins_aws
from tests.stack_variants import AL2023_RELEASE

Config = dict[str, Any]

DRA: Config = {
    "cloud": "aws",
    "cluster": {"name": "ml", "region": "us-east-1"},
    "pools": [
        {
            "name": "l4",
            "instanceTypes": ["g6.xlarge"],
            "max": 2,
            "min": 1,
            "allocation": "dra",
            "aws": {"amiReleaseVersion": AL2023_RELEASE},
        }
    ],
    "namespaces": [{"name": "ml-team", "gpuQuota": 2}],
}


def dra(**pool: Any) -> Config:
    config = copy.deepcopy(DRA)
    config["pools"][0].update(pool)
    return config


def problems(raw: Config) -> dict[str, tuple[Any, str]]:
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return {p.path: (p.value, p.expected) for p in error.value.problems}


def test_a_dra_pool_on_a_cluster_of_1_34_or_later_is_valid() -> None:
    assert load_stack_config(DRA).pools[0].allocation == "dra"


def test_a_pool_allocates_through_the_device_plugin_unless_told() -> None:
    config = copy.deepcopy(DRA)
    del config["pools"][0]["allocation"]

    assert load_stack_config(config).pools[0].allocation == "device-plugin"


def test_a_dra_pool_on_a_created_1_33_cluster_is_refused_by_key() -> None:
    config = dra()
    config["cluster"]["create"] = {
        "kubernetesVersion": "1.33",
        "endpoint": {"access": "public", "publicCidrs": ["203.0.113.0/24"]},
    }
    config["monitoring"] = {"installPrometheusStack": True}
    config["pools"][0]["aws"]["amiReleaseVersion"] = "1.33.13-20260714"

    assert problems(config) == {
        "gpu-platform:pools[0].allocation": (
            "dra",
            "device-plugin, or no value, on Kubernetes 1.33 (cluster.create.kubernetesVersion):"
            " dra needs Kubernetes 1.34 or later, where resource.k8s.io/v1 is served",
        )
    }


@pytest.mark.parametrize(
    ("changes", "key", "begins"),
    [
        ({"provisioner": "karpenter"}, "pools[0].allocation", "device-plugin, or no value, with"),
        (
            {"cluster": {**DRA["cluster"], "nodeImage": "bottlerocket"}},
            "pools[0].allocation",
            "device-plugin, or no value, on bottlerocket nodes",
        ),
        ({"queues": {"enabled": True}}, "queues.enabled", "false with a DRA pool (pools[0])"),
    ],
    ids=["karpenter", "bottlerocket", "queues"],
)
def test_a_dra_pool_where_it_cannot_run_is_refused_by_key(
    changes: Config, key: str, begins: str
) -> None:
    config = {**dra(), **changes}
    if "provisioner" in changes:
        config["pools"][0]["min"] = 0

    found = problems(config)

    assert list(found) == [f"gpu-platform:{key}"]
    assert found[f"gpu-platform:{key}"][1].startswith(begins)


def test_a_dra_pool_on_eks_auto_mode_is_refused_by_key() -> None:
    config = dra(min=0, aws={})
    config["provisioner"] = "eks-auto-mode"

    assert problems(config) == {
        "gpu-platform:pools[0].allocation": (
            "dra",
            "device-plugin, or no value, with provisioner eks-auto-mode: Auto Mode's nodes run"
            " AWS's own NVIDIA device plugin, and NVIDIA's DRA driver installed by the platform"
            " would be a second one on the same GPUs (docs/eks-auto-mode.md)",
        )
    }


def test_a_dra_pool_on_gke_is_refused_by_key() -> None:
    config = {
        "cloud": "gcp",
        "cluster": {"name": "ml", "project": "p", "location": "us-central1"},
        "pools": [
            {
                "name": "l4",
                "instanceTypes": ["g2-standard-8"],
                "max": 2,
                "min": 1,
                "allocation": "dra",
            }
        ],
    }

    ((key, (value, expected)),) = problems(config).items()

    assert (key, value) == ("gpu-platform:pools[0].allocation", "dra")
    assert expected.startswith("device-plugin, or no value, on GKE")


def test_a_dra_pool_kept_at_zero_or_shared_is_refused_by_key() -> None:
    config = dra(min=0, sharing={"mode": "time-slicing", "replicas": 4})
    config["namespaces"][0] = {"name": "ml-team", "sharedGpuQuota": 8}

    found = problems(config)

    assert {key: value for key, (value, _) in found.items()} == {
        "gpu-platform:pools[0].sharing.mode": "time-slicing",
        "gpu-platform:pools[0].min": 0,
    }


def test_a_smoke_test_or_canary_on_a_dra_pool_is_refused_by_key() -> None:
    config = dra()
    config["pools"].append({**config["pools"][0], "name": "l4-canary", "canaryOf": "l4"})
    config["namespaces"][0]["smokeTestPool"] = "l4"

    found = problems(config)

    assert {key: value for key, (value, _) in found.items()} == {
        "gpu-platform:pools[1].canaryOf": "l4",
        "gpu-platform:namespaces[0].smokeTestPool": "l4",
    }


def dra_dev_config(dev_config: Config, ami_release: str = AL2023_RELEASE) -> Config:
    """The dev stack with its pool made an exclusive DRA pool of one node kept, its tenant's
    smoke test and queue gone (neither runs on a DRA pool)."""
    (pool,) = dev_config["gpu-platform:pools"]
    pool.update(
        allocation="dra", min=1, capacity="on-demand", aws={"amiReleaseVersion": ami_release}
    )
    del pool["sharing"]
    dev_config.pop("gpu-platform:queues", None)
    for namespace in dev_config["gpu-platform:namespaces"]:
        namespace.pop("smokeTestPool", None)
        namespace.pop("sharedGpuQuota", None)
        namespace["gpuQuota"] = 2
    return dev_config


def test_a_dra_pool_on_an_existing_1_33_cluster_is_refused_by_key_when_it_is_looked_up(
    dev_config: Config, failed_plan_for, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stand_ins_aws, "STAND_IN_KUBERNETES_VERSION", "1.33")

    plan = failed_plan_for(dra_dev_config(dev_config, "1.33.13-20260714"))

    assert isinstance(plan.error, ConfigError)
    assert [(p.path, p.value, p.expected) for p in plan.error.problems] == [
        (
            "gpu-platform:pools[0].allocation",
            "dra",
            "device-plugin, or no value, on Kubernetes 1.33 (the cluster's version): dra needs"
            " Kubernetes 1.34 or later, where resource.k8s.io/v1 is served",
        )
    ]


def test_a_dra_pool_beside_a_device_plugin_pool_is_refused_by_key() -> None:
    config = dra()
    config["pools"].insert(0, {**config["pools"][0], "name": "t4", "allocation": "device-plugin"})

    found = problems(config)

    # gpu-operator v26.7.0: the validator skips its check for nvidia.com/gpu only with the
    # device plugin off cluster-wide (controllers/object_controls.go).
    assert list(found) == ["gpu-platform:pools[1].allocation"]
    assert found["gpu-platform:pools[1].allocation"][1].startswith(
        "device-plugin, as pools[0] (t4) uses, or dra on every pool"
    )

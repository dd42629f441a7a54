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
            "device-plugin, or no value, with provisioner eks-auto-mode: the platform's DRA"
            " pools run NVIDIA's DRA driver chart, and Auto Mode's nodes run AWS's own NVIDIA"
            " stack (with its own DRA driver only from Kubernetes 1.36), which the platform does"
            " not build DRA pools on yet (docs/eks-auto-mode.md)",
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


# What a DRA pool relies on in the GPU Operator, read at its pinned chart v26.7.0: the validator
# leaves out its wait for nvidia.com/gpu only with the device plugin off
# (controllers/object_controls.go, the validator's `plugin` init container), and its exporter,
# `dcgmExporter.version: 4.6.0-4.8.3-distroless` (deployments/gpu-operator/values.yaml), reads
# ResourceSlices as resource.k8s.io/v1 with KUBERNETES_ENABLE_DRA. dcgm-exporter 4.5.3-4.8.2's
# internal/pkg/transformation/dra.go imports resource/v1beta1 alone.
OLDER_EXPORTER = "4.5.3-4.8.2-distroless"
DIGEST = "@sha256:" + "0" * 64


def with_operator(**operator: Any) -> Config:
    config = dra()
    config["operator"] = operator
    return config


@pytest.mark.parametrize(
    ("operator", "key", "value", "begins"),
    [
        (
            {"chartVersion": "v26.3.0"},
            "operator.chartVersion",
            "v26.3.0",
            "v26.7.0, the pinned version, with a DRA pool (pools[0])",
        ),
        (
            {"overrides": {"devicePlugin": {"enabled": True}}},
            "operator.overrides.devicePlugin.enabled",
            True,
            "the boolean false, or no value, with a DRA pool (pools[0])",
        ),
        (
            {"overrides": {"dcgmExporter": {"env": [{"name": "KUBERNETES_ENABLE_DRA"}]}}},
            "operator.overrides.dcgmExporter.env[0]",
            {"name": "KUBERNETES_ENABLE_DRA"},
            "no entry named KUBERNETES_ENABLE_DRA with a DRA pool (pools[0])",
        ),
        (
            {
                "overrides": {
                    "dcgmExporter": {
                        "repository": "nvcr.io/nvidia/k8s",
                        "image": "dcgm-exporter",
                        "version": OLDER_EXPORTER,
                    }
                }
            },
            "operator.overrides.dcgmExporter.version",
            OLDER_EXPORTER,
            "a dcgm-exporter image tagged <DCGM version>-<exporter version>[-<base>], of the"
            " pinned chart's exporter (4.6.0-4.8.3-distroless) or a later one, with a DRA pool"
            " (pools[0])",
        ),
        # urfave/cli v2.27.7 (dcgm-exporter's go.mod) takes the flag, with one dash or two, over
        # its env var (pkg/cmd/app.go at 4.5.3-4.8.2, `kubernetes-enable-dra`).
        (
            {"overrides": {"dcgmExporter": {"args": ["-f", "x.csv", "--kubernetes-enable-dra=0"]}}},
            "operator.overrides.dcgmExporter.args[2]",
            "--kubernetes-enable-dra=0",
            "no --kubernetes-enable-dra flag with a DRA pool (pools[0])",
        ),
        (
            {"overrides": {"dcgmExporter": {"args": ["-kubernetes-enable-dra=false"]}}},
            "operator.overrides.dcgmExporter.args[0]",
            "-kubernetes-enable-dra=false",
            "no --kubernetes-enable-dra flag with a DRA pool (pools[0])",
        ),
        (
            {"overrides": {"dcgmExporter": {"image": "nvcr.io/nvidia/k8s/dcgm-exporter" + DIGEST}}},
            "operator.overrides.dcgmExporter.image",
            "nvcr.io/nvidia/k8s/dcgm-exporter" + DIGEST,
            "a dcgm-exporter image tagged <DCGM version>-<exporter version>[-<base>]",
        ),
    ],
    ids=[
        "chart-version",
        "device-plugin",
        "exporter-dra-env",
        "older-exporter",
        "exporter-dra-flag",
        "exporter-dra-flag-one-dash",
        "digest-alone",
    ],
)
def test_an_operator_setting_undoing_what_a_dra_pool_relies_on_is_refused_by_key(
    operator: Config, key: str, value: Any, begins: str
) -> None:
    found = problems(with_operator(**operator))

    assert list(found) == [f"gpu-platform:{key}"]
    assert found[f"gpu-platform:{key}"][0] == value
    assert found[f"gpu-platform:{key}"][1].startswith(begins)


@pytest.mark.parametrize(
    "operator",
    [
        {"chartVersion": "v26.7.0"},
        {"overrides": {"devicePlugin": {"enabled": False}}},
        {
            "overrides": {
                "dcgmExporter": {"env": [{"name": "DCGM_EXPORTER_INTERVAL", "value": "1"}]}
            }
        },
        # The pinned exporter from a mirror, as a whole reference with its tag beside the digest.
        {
            "overrides": {
                "dcgmExporter": {
                    "image": "mirror.example.com:5000/k8s/dcgm-exporter:"
                    "4.6.0-4.8.3-ubuntu22.04" + DIGEST
                }
            }
        },
        # A later exporter, whose dra.go reads resource.k8s.io/v1 first.
        {
            "overrides": {
                "dcgmExporter": {
                    "repository": "nvcr.io/nvidia/k8s",
                    "image": "dcgm-exporter",
                    "version": "4.6.0-4.9.0-distroless",
                }
            }
        },
        # The pinned exporter from a mirror, its three values set, the tag beside the digest.
        {
            "overrides": {
                "dcgmExporter": {
                    "repository": "mirror.example.com:5000/k8s",
                    "image": "dcgm-exporter",
                    "version": "4.6.0-4.8.3-distroless" + DIGEST,
                }
            }
        },
        {"overrides": {"dcgmExporter": {"args": ["--kubernetes-enable-pod-labels"]}}},
    ],
    ids=[
        "chart-version",
        "device-plugin",
        "exporter-env",
        "exporter-mirror",
        "later-exporter",
        "exporter-mirror-triple",
        "exporter-args",
    ],
)
def test_an_operator_setting_a_dra_pool_does_not_depend_on_is_accepted(operator: Config) -> None:
    assert load_stack_config(with_operator(**operator)).pools[0].allocation == "dra"


def test_the_operator_settings_a_dra_pool_relies_on_are_free_without_one() -> None:
    config = with_operator(
        chartVersion="v26.3.0",
        overrides={
            "devicePlugin": {"enabled": True},
            "dcgmExporter": {
                "env": [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}],
                "args": ["--kubernetes-enable-dra"],
            },
        },
    )
    del config["pools"][0]["allocation"]

    assert load_stack_config(config).operator.chart_version == "v26.3.0"

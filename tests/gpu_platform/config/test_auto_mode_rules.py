"""Config validation of `provisioner: eks-auto-mode`: an EKS setting whose pools are NodePools of
Auto Mode's own Karpenter, on its own AMIs with its own NVIDIA device plugin, so that what Auto
Mode runs itself is refused by key, with the value found and what is allowed. The facts are the
EKS user guide's Auto Mode pages (awsdocs/amazon-eks-user-guide, latest/ug/automode/)."""

import copy
from typing import Any

import pytest

from gpu_platform.config import ConfigError, load_stack_config
from gpu_platform.eks.auto_mode.node_pool import NODE_CLASS_SCHEMA
from gpu_platform.kubernetes.crd_schemas import chart_crds

Config = dict[str, Any]

AUTO_MODE: Config = {
    "cloud": "aws",
    "cluster": {"name": "ml", "region": "us-east-1"},
    "provisioner": "eks-auto-mode",
    "pools": [{"name": "l4", "instanceTypes": ["g6.xlarge"], "max": 2}],
    "namespaces": [{"name": "ml-sandbox", "gpuQuota": 4}],
}
GKE: Config = {
    "cloud": "gcp",
    "cluster": {"name": "ml", "project": "p", "location": "us-central1"},
    "pools": [{"name": "l4", "instanceTypes": ["g2-standard-8"], "max": 2}],
}
REFUSED = "no value with provisioner eks-auto-mode"


def auto_mode(**changes: Any) -> Config:
    return {**copy.deepcopy(AUTO_MODE), **changes}


def with_pool(**fields: Any) -> Config:
    config = auto_mode()
    config["pools"][0].update(fields)
    return config


def with_cluster(**fields: Any) -> Config:
    config = auto_mode()
    config["cluster"].update(fields)
    return config


def problems(raw: Config) -> dict[str, str]:
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return {p.path: p.expected for p in error.value.problems}


BAD = [
    ("on GKE", {**GKE, "provisioner": "eks-auto-mode"}, "provisioner", "when cloud is gcp"),
    ("AL2023 nodes", with_cluster(nodeImage="al2023"), "cluster.nodeImage", "bottlerocket or"),
    (
        "a created cluster's system nodes",
        with_cluster(create={"kubernetesVersion": "1.35", "aws": {"systemNodes": {"max": 3}}}),
        "cluster.create.aws.systemNodes",
        REFUSED,
    ),
    (
        "a created cluster's VPC CNI configuration",
        with_cluster(
            create={
                "kubernetesVersion": "1.35",
                "aws": {"vpcCniConfiguration": {"env": {"ENABLE_PREFIX_DELEGATION": "true"}}},
            }
        ),
        "cluster.create.aws.vpcCniConfiguration",
        REFUSED,
    ),
    ("the VPC CNI's role", with_cluster(vpcCniRole=True), "cluster.vpcCniRole", REFUSED),
    (
        "the node monitoring agent",
        with_cluster(nodeMonitoringAgentVersion="v1.4.0-eksbuild.1"),
        "cluster.nodeMonitoringAgentVersion",
        REFUSED,
    ),
    (
        "autoscaler settings",
        auto_mode(autoscaler={"install": False}),
        "autoscaler.install",
        REFUSED,
    ),
    (
        "karpenter settings",
        auto_mode(karpenter={"install": False}),
        "karpenter.install",
        "no value with provisioner eks-auto-mode, which runs its own Karpenter",
    ),
    ("a minimum", with_pool(min=1), "pools[0].min", "0 with provisioner eks-auto-mode"),
    (
        "time-slicing",
        with_pool(sharing={"mode": "time-slicing", "replicas": 4}),
        "pools[0].sharing.mode",
        "exclusive with provisioner eks-auto-mode",
    ),
    (
        "MIG",
        with_pool(instanceTypes=["p4d.24xlarge"], sharing={"mode": "mig", "profile": "all-1g.5gb"}),
        "pools[0].sharing.mode",
        "exclusive with provisioner eks-auto-mode",
    ),
    ("a built-in pool's name", with_pool(name="general-purpose"), "pools[0].name", "other than"),
    ("the built-in class's name", with_pool(name="default"), "pools[0].name", "other than"),
    (
        "a pinned AMI",
        with_pool(aws={"amiReleaseVersion": "1.54.0-0d4a7f31"}),
        "pools[0].aws.amiReleaseVersion",
        REFUSED,
    ),
    ("EFA", with_pool(aws={"efa": True}), "pools[0].aws.efa", REFUSED),
    # With queues on, nothing else refuses it: Kueue would hold a queued job on a
    # ProvisioningRequest check that nothing serves (kubernetes-sigs/karpenter v1.14.1's only
    # autoscaling.x-k8s.io kind is CapacityBuffer, pkg/apis/autoscaling/v1beta1).
    (
        "all-or-nothing scale-up",
        {**with_pool(aws={"atomicScaleUp": True}), "queues": {"enabled": True}},
        "pools[0].aws.atomicScaleUp",
        "no value with provisioner eks-auto-mode: Auto Mode's Karpenter has no"
        " ProvisioningRequests",
    ),
    ("node repair", with_pool(aws={"nodeRepair": True}), "pools[0].aws.nodeRepair", REFUSED),
    (
        "a node role",
        with_pool(aws={"nodeRoleArn": "arn:aws:iam::123456789012:role/n"}),
        "pools[0].aws.nodeRoleArn",
        REFUSED,
    ),
    (
        "a resource group of reservations",
        with_pool(
            capacity="reserved",
            aws={
                "capacityReservationResourceGroupArn": (
                    "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"
                )
            },
        ),
        "pools[0].aws.capacityReservationResourceGroupArn",
        REFUSED,
    ),
    (
        "a drift window as long as its week",
        with_pool(aws={"driftWindow": {"schedule": "0 2 * * 6", "duration": "168h"}}),
        "pools[0].aws.driftWindow.duration",
        "more than none and less than the week the window recurs in (0 2 * * 6)",
    ),
    (
        "a daily drift window of no time",
        with_pool(aws={"driftWindow": {"schedule": "0 2 * * *", "duration": "0m"}}),
        "pools[0].aws.driftWindow.duration",
        "more than none and less than the day the window recurs in (0 2 * * *)",
    ),
]


@pytest.mark.parametrize(("raw", "path", "allowed"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_what_auto_mode_runs_itself_is_refused_by_key(raw: Config, path: str, allowed: str) -> None:
    found = problems(raw)
    assert allowed in found[f"gpu-platform:{path}"], found


def test_an_auto_mode_stack_of_exclusive_pools_kept_at_zero_is_valid() -> None:
    config = load_stack_config(
        {
            **with_pool(aws={"consolidateAfterMinutes": 30, "emptyNodesBudgetPercent": 50}),
            "karpenter": {"consolidateAfterMinutes": 5, "terminationGracePeriodHours": 48},
        }
    )
    assert (config.uses_auto_mode, config.uses_node_pools, config.uses_karpenter) == (
        True,
        True,
        False,
    )
    # Auto Mode's nodes run Bottlerocket (EKS user guide, automode/auto-mng.adoc: "Can run AWS
    # Bottlerocket: Yes - Required"), whatever nodeImage says, which may only say so.
    assert config.node_image == "bottlerocket"
    assert load_stack_config(with_cluster(nodeImage="bottlerocket")).node_image == "bottlerocket"


def test_auto_mode_pools_may_take_sizes_by_family_and_reservations_by_id() -> None:
    load_stack_config(
        with_pool(instanceTypes=[], accelerator="l4", aws={"instanceFamilies": ["g6"]})
    )
    load_stack_config(
        with_pool(
            capacity="capacity-block",
            zones=["us-east-1a"],
            aws={"capacityReservationId": "cr-0123456789abcdef0"},
        )
    )


def test_a_drift_window_is_a_daily_or_weekly_cron_and_auto_mode_only() -> None:
    load_stack_config(with_pool(aws={"driftWindow": {"schedule": "30 22 * * 0", "duration": "3h"}}))
    found = problems(with_pool(aws={"driftWindow": {"schedule": "0 2 1 * *", "duration": "4h"}}))
    assert "gpu-platform:pools[0].aws.driftWindow.schedule" in found, found
    found = problems(with_pool(aws={"driftWindow": {"schedule": "0 2 * * 6", "duration": "4h30s"}}))
    assert "gpu-platform:pools[0].aws.driftWindow.duration" in found, found
    karpenter = {
        **with_pool(aws={"driftWindow": {"schedule": "0 2 * * 6", "duration": "4h"}}),
        "provisioner": "karpenter",
    }
    karpenter["pools"][0]["aws"]["amiReleaseVersion"] = "1.35.6-20260714"
    found = problems(karpenter)
    assert found["gpu-platform:pools[0].aws.driftWindow"].startswith(
        "no value unless provisioner is eks-auto-mode"
    ), found


def test_efa_is_refused_as_what_the_platform_does_not_build_yet() -> None:
    assert problems(with_pool(aws={"efa": True}))["gpu-platform:pools[0].aws.efa"] == (
        "no value with provisioner eks-auto-mode: the platform does not build EFA on Auto Mode"
        " pools yet: it renders no NodeClass advancedNetworking.networkInterfaces or"
        " placementGroupSelector (which AWS's newer guide gives Auto Mode and the NodeClass"
        " schema the platform pins lacks), and runs no EFA device plugin or DRA driver on Auto"
        " Mode nodes"
    )


def test_the_pinned_node_class_schema_lacks_the_efa_fields_the_refusal_names() -> None:
    # The refusal says the pinned schema (written from create-node-class.adoc) lacks them: once
    # it gains them, the refusal's wording is out of date.
    schema = chart_crds(*NODE_CLASS_SCHEMA)[0]["versions"]["v1"]["properties"]["spec"]

    assert (
        sorted(schema["properties"]["advancedNetworking"]["properties"]),
        "placementGroupSelector" in schema["properties"],
    ) == (["httpsProxy", "noProxy"], False)

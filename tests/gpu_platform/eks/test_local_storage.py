"""Local NVMe drives for images and pod scratch space: where the pool's nodes use them, the
NodeConfig nodeadm reads, and the ephemeral storage the autoscaler is told of."""

import base64
import email
import tomllib
from collections.abc import Callable
from typing import Any

import yaml

from gpu_platform.offline.program import Plan

from .plans import asg_tags, launch_template, on_bottlerocket, with_aws_options, with_pool

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
EPHEMERAL = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"


def with_p5_pool(config: Config, **changes: Any) -> Config:
    """The dev pool on p5.48xlarge: 8 local NVMe drives of 3800 GB."""
    return with_pool(
        config,
        instanceTypes=["p5.48xlarge"],
        accelerator="h100-80gb",
        gpusPerNode=8,
        sharing={"mode": "exclusive"},
        diskSizeGib=500,
        **changes,
    )


def node_config(user_data: str) -> dict[str, Any]:
    """The NodeConfig part of a MIME multipart user data, as nodeadm reads it."""
    message = email.message_from_bytes(base64.b64decode(user_data))
    (part,) = [p for p in message.walk() if p.get_content_type() == "application/node.eks.aws"]
    return dict(yaml.safe_load(str(part.get_payload())))


def test_a_pool_with_large_local_drives_keeps_its_data_on_a_raid0_of_them(
    dev_config: Config, plan_for: PlanFor
) -> None:
    inputs = launch_template(plan_for(with_p5_pool(dev_config))).inputs

    # amazon-eks-ami nodeadm/api/v1alpha1/nodeconfig_types.go: LocalStorageOptions.
    assert node_config(inputs["userData"]) == {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {"instance": {"localStorage": {"strategy": "RAID0"}}},
    }


def test_the_autoscaler_is_told_of_the_drives_not_the_volume(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # 30400 GB = 28312 GiB, less the 10% eviction threshold and 2 GiB.
    tags = asg_tags(plan_for(with_p5_pool(dev_config)))

    assert tags[EPHEMERAL] == "25478Gi"


def test_drives_smaller_than_the_volume_are_left_alone(dev_plan: Plan) -> None:
    # The dev pool's g4dn.xlarge has 125 GB of NVMe, less than its 200 GiB volume.
    assert "userData" not in launch_template(dev_plan).inputs
    assert asg_tags(dev_plan)[EPHEMERAL] == "178Gi"


def test_local_drives_can_be_turned_off(dev_config: Config, plan_for: PlanFor) -> None:
    config = with_aws_options(with_p5_pool(dev_config), localNvme=False)

    assert "userData" not in launch_template(plan_for(config)).inputs


def test_bottlerocket_binds_its_data_directories_on_a_raid0_of_the_drives(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(on_bottlerocket(with_p5_pool(dev_config)))

    user_data = tomllib.loads(base64.b64decode(launch_template(plan).inputs["userData"]).decode())
    # bottlerocket.dev, Bootstrap Commands, "Configure ephemeral disks: In a Kubernetes host".
    assert user_data == {
        "settings": {
            "bootstrap-commands": {
                "k8s-ephemeral-storage": {
                    "commands": [
                        ["apiclient", "ephemeral-storage", "init"],
                        [
                            "apiclient",
                            "ephemeral-storage",
                            "bind",
                            "--dirs",
                            "/var/lib/containerd",
                            "/var/lib/kubelet",
                            "/var/log/pods",
                        ],
                    ],
                    "essential": True,
                    "mode": "always",
                }
            }
        }
    }
    assert asg_tags(plan)[EPHEMERAL] == "25478Gi"

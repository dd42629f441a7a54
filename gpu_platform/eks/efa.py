"""Elastic Fabric Adapter for a training pool (`aws.efa`): what its launch template needs so
that NCCL reaches the other nodes over EFA, not over one ordinary interface.

- One EFA per network card (a p5.48xlarge has 32): the first, device 0 on card 0, of type `efa`,
  also carries the node's IP traffic; the others, device 1 on each further card, are `efa-only`
  and use no IP address from the subnet (the EKS user guide, "Run machine learning training on
  Amazon EKS with Elastic Fabric Adapter").
- A security group that lets all traffic in from and out to itself: EFA's OS bypass works only
  between members of such a group (the EC2 user guide, "Prepare an EFA-enabled security group").
  A launch template that lists network interfaces names their security groups itself, so the
  first interface also carries the cluster security group, which EKS would otherwise add.
- A `cluster` placement group, which starts the instances close together in the pool's zone.
  A pool launching into a reservation goes without one: a Capacity Block's instances are
  placed together already, and an instance launched into a placement group matches only
  capacity reservations made in that group (EC2 user guide, "Capacity Reservations in cluster
  placement groups"), which one the stack creates cannot have.

The nodes' EFA host software comes with the EKS NVIDIA AMIs; the EFA device plugin
(`EFA_DEVICE_PLUGIN_CHART`) advertises the devices to pods as `vpc.amazonaws.com/efa`.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_aws import ec2

from gpu_platform.eks.cluster import EksCluster


@dataclass(frozen=True)
class EfaNetwork:
    """What an EFA pool's nodes launch with beside their interfaces."""

    security_group_id: pulumi.Input[str]
    """The group EFA traffic flows in, on every interface beside the cluster security group."""
    placement_group_name: pulumi.Input[str] | None
    """The pool's `cluster` placement group; None for a pool launching into a reservation."""


def efa_network(
    name: str,
    cluster: EksCluster,
    reserved: bool,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> EfaNetwork:
    """Create an EFA pool's security group and, unless it launches into a reservation, its
    placement group."""
    group = ec2.SecurityGroup(
        f"{name}-efa",
        description=f"EFA traffic between the nodes of GPU pool {name}",
        vpc_id=cluster.vpc_id,
        ingress=[ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True)],
        egress=[ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, self=True)],
        region=cluster.region,
        tags=dict(tags),
        opts=opts,
    )
    if reserved:
        return EfaNetwork(group.id, None)
    placement = ec2.PlacementGroup(
        f"{name}-placement",
        strategy="cluster",
        region=cluster.region,
        tags=dict(tags),
        opts=opts,
    )
    return EfaNetwork(group.id, placement.name)


def efa_launch_template_options(
    name: str,
    cluster: EksCluster,
    interfaces: int,
    reserved: bool,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> dict[str, Any]:
    """The launch template arguments of an EFA pool, creating its security group and placement
    group; none where the pool has no EFA interfaces."""
    if not interfaces:
        return {}
    network = efa_network(name, cluster, reserved, tags, opts)
    # Cards above 0 keep their `efa-only` at device index 1, which EC2 accepts and earlier
    # releases wrote, where AWS's guide ("Maximize network bandwidth on Amazon EC2 instances with
    # multiple network cards") now shows device 0 (as the Karpenter node classes use, under a
    # primary of their own: `efa_network_interfaces`). Moving it would make a new launch template
    # version, and the node group takes every new version as an update that replaces all its
    # nodes (EKS user guide, "Understand each phase of node updates"): every running EFA training
    # node of every stack, for no change in the EFA devices its pods get.
    network_interfaces = [
        ec2.LaunchTemplateNetworkInterfaceArgs(
            device_index=0 if card == 0 else 1,
            network_card_index=card,
            interface_type="efa" if card == 0 else "efa-only",
            security_groups=(
                [cluster.security_group_id, network.security_group_id]
                if card == 0
                else [network.security_group_id]
            ),
            delete_on_termination="true",
        )
        for card in range(interfaces)
    ]
    if network.placement_group_name is None:
        return {"network_interfaces": network_interfaces}
    return {
        "network_interfaces": network_interfaces,
        "placement": ec2.LaunchTemplatePlacementArgs(group_name=network.placement_group_name),
    }

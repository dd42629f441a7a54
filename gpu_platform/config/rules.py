"""Rules across fields, run once every field is valid: each concern's own, in the order the
report lists them, and those about the stack as a whole (the cluster, settings of the other
cloud)."""

import functools
import importlib.metadata
import importlib.resources
import json
from collections.abc import Callable, Iterator, Mapping

from pydantic import BaseModel

from gpu_platform.config.auto_mode_rules import auto_mode_problems
from gpu_platform.config.canary_rules import canary_problems
from gpu_platform.config.cluster_create_rules import cluster_create_problems
from gpu_platform.config.dra_rules import dra_problems
from gpu_platform.config.eks_rules import (
    ami_release_problems,
    bottlerocket_sharing_problems,
    instance_choice_problems,
    karpenter_problems,
    reservation_problems,
)
from gpu_platform.config.fields import NODE_IMAGES, Cloud, SetAsideKeyRead
from gpu_platform.config.gke_rules import gke_capacity_problems, gke_pool_problems
from gpu_platform.config.operator import OPERATOR_DRIVER_OPTIONS
from gpu_platform.config.operator_rules import (
    gke_exporter_override_problems,
    monitoring_problems,
    operator_override_problems,
)
from gpu_platform.config.pool_rules import pool_problems
from gpu_platform.config.problems import MISSING, ConfigProblem, key_of, key_path
from gpu_platform.config.queue_rules import queue_problems
from gpu_platform.config.stack import StackConfig
from gpu_platform.config.tenant_rules import namespace_problems


def cross_field_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Every rule's problems. Over a config whose invalid keys were set aside (`set_aside`), a
    rule that reads one stops there: what it found before stands, as it read valid fields
    only, and it says nothing more, as it would judge without the value it depends on."""
    for rule in _RULES:
        try:
            yield from rule(config)
        except SetAsideKeyRead:
            continue


_OTHER_PARTITIONS = ("cn-", "us-gov-")
"""How the regions of the aws-cn and aws-us-gov partitions begin."""


@functools.cache
def aws_regions() -> frozenset[str]:
    """The regions of the aws partition, as the AWS SDK the platform is installed with lists
    them (botocore `data/endpoints.json`, `partitions[].regions`): a misspelt region would
    otherwise reach the lookups, whose every answer is "nothing there" (no instance type
    offered), and be blamed on the pools. A region opened since that release of botocore comes
    with its next one."""
    data = json.loads(
        importlib.resources.files("botocore").joinpath("data/endpoints.json").read_bytes()
    )
    (aws,) = (p for p in data["partitions"] if p["partition"] == "aws")
    return frozenset(aws["regions"])


def _cluster_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    cluster = config.cluster
    required = ("region",) if config.cloud is Cloud.AWS else ("project", "location")
    for field in required:
        if getattr(cluster, field) is None:
            yield ConfigProblem(
                key_path("cluster", field), MISSING, f"a value when cloud is {config.cloud}"
            )
    if config.cloud is Cloud.AWS and (cluster.region or "").startswith(_OTHER_PARTITIONS):
        yield ConfigProblem(
            key_path("cluster", "region"),
            cluster.region,
            "a region of the aws partition: docs/iam's documents (the permissions boundary every"
            " role the stack creates carries among them) name arn:aws: ARNs only, which match"
            " nothing in aws-cn (cn-*) or aws-us-gov (us-gov-*)",
        )
    elif config.cloud is Cloud.AWS and cluster.region and cluster.region not in aws_regions():
        yield ConfigProblem(
            key_path("cluster", "region"),
            cluster.region,
            f"a region of the aws partition, one of {', '.join(sorted(aws_regions()))}; a"
            " region AWS opened after the installed botocore"
            f" {importlib.metadata.version('botocore')} (whose list this is) is not among them:"
            " upgrade botocore where the program runs (`uv lock --upgrade-package botocore`"
            " in a project locked with uv, `pip install --upgrade botocore` otherwise)",
        )
    images = NODE_IMAGES[config.cloud]
    if cluster.node_image is not None and cluster.node_image not in images:
        yield ConfigProblem(
            key_path("cluster", "nodeImage"),
            cluster.node_image,
            f"one of {list(images)} when cloud is {config.cloud}",
        )


# Settings only one cloud's components read, by field name, with what each is. The other cloud
# would silently ignore them, so a stack carrying one reads as if it did something; only what
# the user set counts (`model_fields_set`), as every stack has the defaults.
_CLUSTER_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "region": (Cloud.AWS, "the EKS cluster's region"),
    "node_subnet_ids": (Cloud.AWS, "the EKS node groups' subnets"),
    "cni_policy_on_node_role": (Cloud.AWS, "the VPC CNI's policy on the EKS node roles"),
    "vpc_cni_role": (Cloud.AWS, "the VPC CNI's EKS Pod Identity role"),
    "node_monitoring_agent_version": (Cloud.AWS, "an EKS add-on"),
    "project": (Cloud.GCP, "the GKE cluster's project"),
    "location": (Cloud.GCP, "the GKE cluster's location"),
}
_OPERATOR_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "critical_pod_quota": (Cloud.GCP, "GKE admits critical pods outside kube-system by quota"),
    **dict.fromkeys(
        OPERATOR_DRIVER_OPTIONS,
        (Cloud.GCP, "the operator builds the driver on GKE Ubuntu nodes only"),
    ),
}
_MONITORING_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "google_managed_prometheus": (Cloud.GCP, "Managed Service for Prometheus is GKE's"),
}
_STACK_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "autoscaler": (Cloud.AWS, "GKE scales its node pools itself"),
    "provisioner": (Cloud.AWS, "GKE scales its node pools itself"),
    "karpenter": (Cloud.AWS, "Karpenter launches EC2 instances"),
}
_POOL_OPTIONS: Mapping[str, tuple[Cloud, str]] = {
    "aws": (Cloud.AWS, "EKS node group settings"),
    "gcp": (Cloud.GCP, "GKE node pool settings"),
}


def _other_cloud_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    sections: list[tuple[tuple[str | int, ...], BaseModel, Mapping[str, tuple[Cloud, str]]]] = [
        ((), config, _STACK_OPTIONS),
        (("cluster",), config.cluster, _CLUSTER_OPTIONS),
        (("operator",), config.operator, _OPERATOR_OPTIONS),
        (("monitoring",), config.monitoring, _MONITORING_OPTIONS),
    ]
    sections += [(("pools", i), pool, _POOL_OPTIONS) for i, pool in enumerate(config.pools)]
    for loc, model, options in sections:
        for field, (cloud, what) in options.items():
            if cloud is config.cloud or field not in model.model_fields_set:
                continue
            value = getattr(model, field)
            if isinstance(value, BaseModel):
                # A block counts by what is set in it: `aws: {}` sets nothing.
                value = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
                if not value:
                    continue
            yield ConfigProblem(
                key_path(*loc, key_of(type(model), field)),
                value,
                f"no value when cloud is {config.cloud}: it applies to {cloud} stacks only"
                f" ({what})",
            )


_RULES: tuple[Callable[[StackConfig], Iterator[ConfigProblem]], ...] = (
    _cluster_problems,
    cluster_create_problems,
    _other_cloud_problems,
    pool_problems,
    reservation_problems,
    instance_choice_problems,
    ami_release_problems,
    canary_problems,
    bottlerocket_sharing_problems,
    gke_pool_problems,
    gke_capacity_problems,
    operator_override_problems,
    gke_exporter_override_problems,
    namespace_problems,
    queue_problems,
    monitoring_problems,
    karpenter_problems,
    auto_mode_problems,
    dra_problems,
)

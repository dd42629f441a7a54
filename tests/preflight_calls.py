"""The AWS calls `gpu-platform preflight` makes, recorded as its tests run it, and whether the
pre-flight policy (docs/iam/eks-preflight-policy.json) allows each for a role tagged like a
committed EKS stack's deploy role.

The recorder wraps botocore's `BaseClient._make_api_call`, which every call and every page of a
paginator goes through (botocore/client.py), Stubber's and moto's answers included, and keeps
the calls the package's command code makes (`gpu_platform.cli.*` on the call stack), not a
test's own setup (the VPC and cluster it creates in moto)."""

import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import botocore.client
import pytest

from gpu_platform.stack_files import stack_config
from tests.aws_service_reference import resource_types, sent
from tests.iam_policy import allowed
from tests.repository import PROJECT, ROOT

POLICY = ROOT / "docs" / "iam" / "eks-preflight-policy.json"
EKS_STACKS = ("dev", "prod", "karpenter-dev", "eks-new")
CONTROLLER_ROLE_NAME = "KarpenterControllerRole-ml"
"""The existing Karpenter controller's role in the tests' Pod Identity associations."""
ACCOUNT = "123456789012"
"""moto's account, which the Stubber's answers use too."""
_COMMAND_CODE = "gpu_platform.cli."
# A service-linked role's path is `/aws-service-role/<service principal>/` (IAM User Guide,
# "Using service-linked roles"); GetRole names the role without it, IAM authorizes its ARN.
_SERVICE_LINKED_PATHS = {
    "AWSServiceRoleForAmazonEKS": "aws-service-role/eks.amazonaws.com/",
    "AWSServiceRoleForAmazonEKSNodegroup": "aws-service-role/eks-nodegroup.amazonaws.com/",
    "AWSServiceRoleForAutoScaling": "aws-service-role/autoscaling.amazonaws.com/",
    "AWSServiceRoleForEC2Spot": "aws-service-role/spot.amazonaws.com/",
}


@dataclass(frozen=True)
class Call:
    """One AWS call: the IAM action it needs and the ARN IAM authorizes it on."""

    action: str
    resource: str


def _eks(region: str, path: str) -> str:
    return f"arn:aws:eks:{region}:{ACCOUNT}:{path}"


def _role(name: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{_SERVICE_LINKED_PATHS.get(name, '')}{name}"


def _group(group: str, region: str) -> str:
    return (
        group
        if group.startswith("arn:")
        else f"arn:aws:resource-groups:{region}:{ACCOUNT}:group/{group}"
    )


def resource_of(action: str, params: Mapping[str, Any], region: str) -> str:
    """The ARN IAM authorizes `action` on, named as the Service Authorization Reference's
    resource types for it name theirs (an EKS node group's and add-on's end in an id the call
    does not know: any does); `*` for an action the reference scopes to no resource."""
    p = params
    named = {
        "eks:DescribeCluster": lambda: _eks(region, f"cluster/{p.get('name')}"),
        "eks:ListNodegroups": lambda: _eks(region, f"cluster/{p['clusterName']}"),
        "eks:ListPodIdentityAssociations": lambda: _eks(region, f"cluster/{p['clusterName']}"),
        "eks:DescribeNodegroup": lambda: _eks(
            region, f"nodegroup/{p['clusterName']}/{p['nodegroupName']}/id"
        ),
        "eks:DescribeAddon": lambda: _eks(region, f"addon/{p['clusterName']}/{p['addonName']}/id"),
        "eks:DescribePodIdentityAssociation": lambda: _eks(
            region, f"podidentityassociation/{p['clusterName']}/{p['associationId']}"
        ),
        # The principal's account and name, then an id the call does not know: any does.
        "eks:DescribeAccessEntry": lambda: _eks(
            region,
            f"access-entry/{p['clusterName']}/role/{p['principalArn'].split(':')[4]}"
            f"/{p['principalArn'].rsplit('/', 1)[-1]}/id",
        ),
        "servicequotas:GetServiceQuota": lambda: (
            f"arn:aws:servicequotas:{region}:{ACCOUNT}:{p['ServiceCode']}/{p['QuotaCode']}"
        ),
        "resource-groups:ListGroupResources": lambda: _group(p["Group"], region),
        "iam:GetRole": lambda: _role(p["RoleName"]),
        "iam:SimulatePrincipalPolicy": lambda: p["PolicySourceArn"],
    }
    if action in named:
        return str(named[action]())
    assert not resource_types(action), f"{action}: name its resource in tests/preflight_calls.py"
    return "*"


@cache
def _principal_contexts() -> list[dict[str, str]]:
    """The condition keys of a role tagged, as docs/iam/README.md asks, with each committed EKS
    stack's cluster and the existing Karpenter controller's role the tests' Pod Identity
    association names: the tags the pre-flight policy reads."""
    contexts = []
    for stack in EKS_STACKS:
        cluster = stack_config(stack, PROJECT)["gpu-platform:cluster"]["name"]
        contexts.append(
            {
                "aws:PrincipalAccount": ACCOUNT,
                "aws:PrincipalTag/gpu-platform-cluster": cluster,
                "aws:PrincipalTag/gpu-platform-karpenter-controller-role": CONTROLLER_ROLE_NAME,
            }
        )
    return contexts


@cache
def _policy() -> dict[str, Any]:
    return dict(json.loads(POLICY.read_text()))


@cache
def permitted(call: Call) -> bool:
    """Whether the pre-flight policy allows the call for some committed EKS stack's role."""
    return any(
        allowed(sent(call.action, call.resource, context), [_policy()])
        for context in _principal_contexts()
    )


def _from_command_code() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith(_COMMAND_CODE):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


@contextmanager
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[Call]]:
    """The calls the command code makes while in the block."""
    calls: set[Call] = set()
    original = botocore.client.BaseClient._make_api_call  # type: ignore[attr-defined]

    def record(client: Any, operation: str, params: Mapping[str, Any]) -> Any:
        if _from_command_code():
            action = f"{client.meta.service_model.signing_name}:{operation}"
            calls.add(Call(action, resource_of(action, params, client.meta.region_name)))
        return original(client, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    yield calls

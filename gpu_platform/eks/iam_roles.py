"""The IAM roles a stack creates on AWS, and how the deploy role is kept to them.

The deploy role (docs/iam/eks-deploy-*-policy.json) may create and change roles only under the
stack's name prefix, only with the platform's permissions boundary, and may attach only the
node policies: what it creates can never hold more than the boundary allows, whatever the
program (or anything running as the deploy role) asks for (IAM User Guide, "Permissions
boundaries for IAM entities", delegating role creation).

- **Names.** Every role is `<prefix>.<purpose>`. The prefix is the cluster's name, shortened
  with a digest of it beyond `PREFIX_LIMIT` characters so that `.pool-<pool>` (pool names run
  to 32) fits IAM's 64. Cluster names and pool names never contain `.`, so one cluster's prefix
  never begins another's role names (`ml-dev.` is not a prefix of `ml-dev-2.pool-a`). SQS
  queues and EventBridge rules the stack creates take the same prefix.
- **Boundary.** `PERMISSIONS_BOUNDARY`, a customer managed policy in the cluster's account
  created once from docs/iam/eks-permissions-boundary.json.
- **Tags.** `CLUSTER_TAG` on every role and on every EC2 resource the stack creates: the deploy
  policy's tag conditions compare it to the deploy role's own `gpu-platform-cluster` tag.
"""

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pulumi
from pulumi_aws import iam

from gpu_platform.config import ConfigProblem
from gpu_platform.eks.cluster import EksCluster
from gpu_platform.eks.permissions_boundary import PERMISSIONS_BOUNDARY

CLUSTER_TAG = "gpu-platform.io/cluster"
"""On every role and EC2 resource the stack creates: the cluster it belongs to."""
VPC_TAG = "gpu-platform.io/vpc"
"""On every role the stack creates: its cluster's VPC, the only one whose network interfaces
the boundary lets the role touch (the VPC CNI's rights name no cluster)."""
REGION_TAG = "gpu-platform.io/region"
"""On every role the stack creates: its cluster's region, which with the cluster's name makes
the instance profile path (`/karpenter/<region>/<cluster>/`) the boundary lets the role create
profiles under: IAM's `*` in a resource matches `/` too, so a path with only the cluster's name
fixed would also match another cluster's (`/karpenter/<region>/ml-dev/ml-prod/`)."""
DEPLOY_ROLE_CLUSTER_TAG = "gpu-platform-cluster"
DEPLOY_ROLE_PREFIX_TAG = "gpu-platform-prefix"
DEPLOY_ROLE_VPC_TAG = "gpu-platform-vpc"
DEPLOY_ROLE_REGION_TAG = "gpu-platform-region"
"""The deploy role's own tags, which its policy's `${aws:PrincipalTag/...}` variables read."""
PREFIX_LIMIT = 26
"""64 (IAM's limit on a role name) less `.pool-` and a pool name of 32."""
_DIGEST = 8


def name_prefix(cluster_name: str) -> str:
    """The stack's prefix: the cluster's name, or its first characters and a digest of it."""
    if len(cluster_name) <= PREFIX_LIMIT:
        return cluster_name
    digest = hashlib.sha256(cluster_name.encode()).hexdigest()[:_DIGEST]
    return f"{cluster_name[: PREFIX_LIMIT - _DIGEST - 1]}-{digest}"


ROLE_NAME_LIMIT = 64
"""IAM's limit on a role's name (IAM CreateRole, `RoleName`)."""
PARTS_WITH_ROLES = ("cluster-autoscaler", "karpenter", "vpc-cni")
"""The parts whose Pod Identity role takes the part's name as its purpose
(`gpu_platform.eks.pod_identity`): named under the instance, they grow with its name."""


def instance_role_name_problems(instance: str, cluster_name: str) -> Iterator[ConfigProblem]:
    """Where the parts of the `GpuPlatform` named `instance` are named under it: a problem by
    the instance's name where the role of a part would pass IAM's limit on the cluster
    `cluster_name`. A role's name is fixed when it is created, so `pulumi up` would fail there,
    after other parts were created."""
    part = max(PARTS_WITH_ROLES, key=len)
    name = f"{name_prefix(cluster_name)}.{instance}-{part}"
    if len(name) > ROLE_NAME_LIMIT:
        yield ConfigProblem(
            "GpuPlatform.name",
            instance,
            f"a name of at most {ROLE_NAME_LIMIT - len(name) + len(instance)} characters on EKS"
            f" cluster {cluster_name} with part_names_under_it: the IAM role of its {part}"
            f" would be {name}, longer than IAM's {ROLE_NAME_LIMIT} characters",
        )


def role_name(cluster: EksCluster, purpose: str) -> str:
    """`<prefix>.<purpose>`."""
    return f"{name_prefix(cluster.name)}.{purpose}"


def boundary_arn(cluster: EksCluster) -> str:
    return f"arn:{cluster.partition}:iam::{cluster.account_id}:policy/{PERMISSIONS_BOUNDARY}"


def cluster_tags(cluster: EksCluster) -> dict[str, str]:
    return {CLUSTER_TAG: cluster.name}


def deploy_role_tags(cluster: EksCluster) -> dict[str, pulumi.Input[str]]:
    """The tags the stack's deploy role must carry for docs/iam/eks-deploy-*-policy.json (the
    VPC's id an output where the stack creates its cluster)."""
    return {
        DEPLOY_ROLE_CLUSTER_TAG: cluster.name,
        DEPLOY_ROLE_PREFIX_TAG: name_prefix(cluster.name),
        DEPLOY_ROLE_VPC_TAG: cluster.vpc_id,
        DEPLOY_ROLE_REGION_TAG: cluster.region,
    }


def unbounded_role(
    resource_name: str,
    description: str,
    trust_policy: Mapping[str, Any],
    managed_policy: str,
    cluster: EksCluster,
    opts: pulumi.ResourceOptions,
    name: str,
) -> tuple[iam.Role, iam.RolePolicyAttachment]:
    """A role without the platform's boundary, with one policy AWS manages (`managed_policy`,
    its path under `policy/`) attached as `<resource_name>-policy`: for a service that needs
    more than the boundary allows (the EKS control plane, the EBS CSI driver), and whose trust
    admits that service alone. Named `name` (`role_name`, under the stack's prefix) and tagged
    with its cluster."""
    role = iam.Role(
        resource_name,
        name=name,
        description=description,
        assume_role_policy=json.dumps(trust_policy),
        tags=cluster_tags(cluster),
        opts=opts,
    )
    attachment = iam.RolePolicyAttachment(
        f"{resource_name}-policy",
        role=role.name,
        policy_arn=f"arn:{cluster.partition}:iam::aws:policy/{managed_policy}",
        opts=opts,
    )
    return role, attachment


def managed_policy_attachments(
    prefix: str,
    role: iam.Role,
    policies: Sequence[str],
    cluster: EksCluster,
    opts: pulumi.ResourceOptions,
) -> list[iam.RolePolicyAttachment]:
    """Each of `policies`, policies AWS manages (their paths under `policy/`), attached to
    `role` as `<prefix>-<policy>`."""
    return [
        iam.RolePolicyAttachment(
            f"{prefix}-{policy}",
            role=role.name,
            policy_arn=f"arn:{cluster.partition}:iam::aws:policy/{policy}",
            opts=opts,
        )
        for policy in policies
    ]


def platform_role(
    resource_name: str,
    purpose: str,
    cluster: EksCluster,
    description: str,
    trust_policy: Mapping[str, Any],
    opts: pulumi.ResourceOptions,
    tags: Mapping[str, str] | None = None,
) -> iam.Role:
    """The role `<prefix>.<purpose>`, within the boundary and tagged with its cluster and the
    cluster's VPC and region."""
    return iam.Role(
        resource_name,
        name=role_name(cluster, purpose),
        description=description,
        assume_role_policy=json.dumps(trust_policy),
        permissions_boundary=boundary_arn(cluster),
        tags={
            **(tags or {}),
            **cluster_tags(cluster),
            VPC_TAG: cluster.vpc_id,
            REGION_TAG: cluster.region,
        },
        opts=opts,
    )

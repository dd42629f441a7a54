"""Binary Authorization of a GKE cluster the platform creates (`cluster.create.gcp.
binaryAuthorization`): GKE checks every pod's images against the project's policy
(container.v1 `BinaryAuthorization.evaluationMode: PROJECT_SINGLETON_POLICY_ENFORCE`, which
terraform-google-kubernetes-engine's safer-cluster always sets), and, in `audit` and `enforce`,
the platform writes that policy: its default rule denies every image
(`ALWAYS_DENY`) but those its allowlist exempts, in dry run (`DRYRUN_AUDIT_LOG_ONLY`: "Dryrun
mode: Audit logging only. This will allow the pod creation as if the admission request had
specified break-glass", binaryauthorization.v1 `AdmissionRule.enforcementMode`) or refusing them
(`ENFORCED_BLOCK_AND_AUDIT_LOG`). A project's policy with no rule written admits every image
(`ALWAYS_ALLOW`), which is why evaluating it alone checks nothing.

The policy is a project singleton (pulumi-gcp `binaryauthorization.Policy`, one per project):
writing it replaces what the project's owner wrote, for every cluster of the project, which is
why the platform wants a project of its own (docs/create-cluster-gke.md).
"""

import pulumi
from pulumi_gcp import binaryauthorization

from gpu_platform.config import GkeClusterCreate
from gpu_platform.gke.policy_owner import POLICY_DESCRIPTION
from gpu_platform.kubernetes.chart_images import prometheus_stack_images
from gpu_platform.kubernetes.chart_images.prometheus_stack import locked_repositories

EVALUATION_MODES = {
    "audit": "PROJECT_SINGLETON_POLICY_ENFORCE",
    "enforce": "PROJECT_SINGLETON_POLICY_ENFORCE",
    "project": "PROJECT_SINGLETON_POLICY_ENFORCE",
    "off": "DISABLED",
}
"""`gcp.binaryAuthorization` -> container.v1 `BinaryAuthorization.evaluationMode`, which has no
other mode (the `enabled` boolean it replaces is deprecated)."""
ENFORCEMENT_MODES = {"audit": "DRYRUN_AUDIT_LOG_ONLY", "enforce": "ENFORCED_BLOCK_AND_AUDIT_LOG"}
"""The policies the platform writes -> their default rule's `enforcementMode`."""
PLATFORM_IMAGES = (
    # The GPU Operator and its operands, DCGM exporter, the GPU smoke test's CUDA image
    # (gpu-operator v26.7.0 values.yaml: nvcr.io/nvidia, nvcr.io/nvidia/cloud-native,
    # nvcr.io/nvidia/k8s).
    "nvcr.io/nvidia/**",
    # Node Feature Discovery, the GPU Operator's dependency (node-feature-discovery v0.19.0
    # deployment/helm/node-feature-discovery/values.yaml `image.repository`).
    "registry.k8s.io/nfd/node-feature-discovery*",
    # Google's NVIDIA driver installer for COS pools (container-engine-accelerators
    # nvidia-driver-installer/cos/daemonset-preloaded.yaml, gpu_platform/versions.py): its
    # partition-gpus and pause containers. Its installer image, `cos-nvidia-installer:fixed`,
    # is preloaded on the node and names no registry a pattern could take, which is why
    # `enforce` is refused on COS.
    "gcr.io/gke-release/**",
    "gke.gcr.io/**",
    # The scripts the platform runs in pods (the idle GPU reaper, checks): the official Python
    # image (gpu_platform/versions.py).
    "docker.io/library/python*",
)
"""What the platform deploys besides the Prometheus stack, by registry path:
binaryauthorization.v1 `AdmissionWhitelistPattern.namePattern` takes a trailing `*`, which does
not match `/` (`gcr.io/nginx*` matches `gcr.io/nginx@latest`, v1beta1's wording), or `**`,
which matches subdirectories."""


def allowed_images(gcp: GkeClusterCreate) -> list[str]:
    """The policy's allowlist: the platform's images, each repository the Prometheus stack's
    charts name (its tag or digest matched by a trailing `*`), then the stack's own. The charts'
    repositories are those the lock read from the pinned chart (`chart_images`), or, where it
    holds none, the committed list derived from an earlier release."""
    repositories = locked_repositories() or prometheus_stack_images()
    charts = [f"{repository}*" for repository in repositories]
    return [*PLATFORM_IMAGES, *charts, *gcp.binary_authorization_allowed_images]


def binary_authorization_policy(
    name: str, project: str, gcp: GkeClusterCreate, parent: pulumi.Resource
) -> binaryauthorization.Policy | None:
    """The project's policy, where `gcp.binaryAuthorization` has the platform write it."""
    enforcement = ENFORCEMENT_MODES.get(gcp.binary_authorization)
    if enforcement is None:
        return None
    return binaryauthorization.Policy(
        f"{name}-binary-authorization",
        project=project,
        description=POLICY_DESCRIPTION,
        # Google's own system images (GKE's add-ons) are admitted by Google's global policy.
        global_policy_evaluation_mode="ENABLE",
        admission_whitelist_patterns=[
            binaryauthorization.PolicyAdmissionWhitelistPatternArgs(name_pattern=pattern)
            for pattern in allowed_images(gcp)
        ],
        default_admission_rule=binaryauthorization.PolicyDefaultAdmissionRuleArgs(
            evaluation_mode="ALWAYS_DENY", enforcement_mode=enforcement
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )

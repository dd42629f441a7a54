"""Check a stack against its cloud before `pulumi up`, from a program: `check_stack`.

Read-only calls answer what would otherwise surface half-way through a deployment or, worse, as
a GPU pool that never scales up. Each cloud has its own checks, loaded for its stacks only (an
EKS check does not load Google's auth library, a GKE check not boto3):
- `gpu_platform.eks.preflight.checks`: the EKS cluster, instance type offerings, subnets and what
  they reach, live node group sizes, reservations and EC2 quotas;
- `gpu_platform.gke.preflight.checks`: the GKE cluster and reservations.
Both are followed by one check made from the chart repository's index rather than the cloud: that
the GPU Operator chart version exists (`gpu_platform.preflight.chart`); and one of the image
registries (`gpu_platform.preflight.images`): the images the lock has no digest for, and the tags
pushed again since it was written. All within one deadline (`gpu_platform.deadline`).
"""

from dataclasses import dataclass

from gpu_platform.config import Cloud, StackConfig, load_stack_config
from gpu_platform.deadline import Deadline
from gpu_platform.preflight.chart import chart_findings
from gpu_platform.preflight.findings import Finding
from gpu_platform.preflight.images import image_findings
from gpu_platform.stack_files import gpu_platform_config, stack_config


@dataclass(frozen=True)
class PreflightReport:
    """What `check_stack` found, in the order: the cloud's checks, the chart, the images."""

    stack: str
    findings: tuple[Finding, ...]

    @property
    def blocking(self) -> tuple[Finding, ...]:
        """The findings that would make `pulumi up` fail or leave a pool that never scales up."""
        return tuple(f for f in self.findings if f.blocking)


def check_stack(stack: str, timeout_seconds: float) -> PreflightReport:
    """Check `stack` of the project in the current directory against its cloud (an EKS stack
    against its AWS account, a GKE stack against its Google Cloud project), then its chart
    version against the chart repository and its images against their registries, all within
    `timeout_seconds` from now, with the default credentials of each cloud's SDK.

    Raises `FileNotFoundError` or `gpu_platform.stack_files.StackFileError` for a stack file
    it cannot read, `gpu_platform.config.ConfigError` for an invalid stack, and
    `gpu_platform.preflight.cannot_check.CannotCheck` when the cloud cannot be asked (no
    credentials, no way to it, a permission missing, no answer by the deadline)."""
    deadline = Deadline(timeout_seconds)
    config = load_stack_config(*gpu_platform_config(stack_config(stack)))
    findings = (
        _cloud_findings(stack, config, deadline)
        + chart_findings(config, deadline)
        + image_findings(stack, config, deadline)
    )
    return PreflightReport(stack, tuple(findings))


def _cloud_findings(stack: str, config: StackConfig, deadline: Deadline) -> list[Finding]:
    # Each cloud's checks load its own client library (boto3, Google's auth) for its stacks only.
    if config.cloud is Cloud.GCP:
        from gpu_platform.gke.preflight import checks

        return checks.check(stack, config, deadline)
    from gpu_platform.eks.preflight import checks as eks_checks

    return eks_checks.check(stack, config, deadline)

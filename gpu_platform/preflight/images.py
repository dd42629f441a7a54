"""What `gpu-platform preflight` finds of a stack's images: those the lock has no digest for,
which run by tag, and those whose tag names another image now than the digest the lock holds (a
tag pushed again since `gpu-platform lock` read it), kube-prometheus-stack's pinned images among
them where the stack installs it (those the lock read from the pinned chart: none where the
chart's pin moved since). The registries are read as the lock reads
them (gpu_platform/lock/registry.py: anonymously, within the command's deadline, and, for an EKS
stack, whose preflight runs with AWS credentials, Amazon ECR's registries with an ECR token); an
image whose registry cannot be read that way is named, not compared."""

from collections.abc import Collection

from gpu_platform.config import Cloud, StackConfig
from gpu_platform.deadline import Deadline, DeadlinePassed
from gpu_platform.kubernetes.chart_images.prometheus_stack import pinned_images
from gpu_platform.lock.ecr import EcrCredentials
from gpu_platform.lock.lockfile import IMAGES, LOCK_COMMAND, Lock, project_lock
from gpu_platform.lock.registry import (
    Credentials,
    ImageNotResolved,
    RegistryClient,
    no_credentials,
)
from gpu_platform.lock.sources import SourceError, Sources
from gpu_platform.platform_images import PlatformImage, platform_images
from gpu_platform.preflight.findings import Finding
from gpu_platform.versions import KUBE_PROMETHEUS_STACK_CHART

SUBJECT = "image digests"


def image_findings(
    stack: str,
    config: StackConfig,
    deadline: Deadline,
    lock: Lock | None = None,
    plain_http: Collection[str] = (),
) -> list[Finding]:
    """The images by tag, then the tags that moved and the registries not read, or that every
    tag still names its locked digest."""
    lock = project_lock() if lock is None else lock
    refresh = f"`{LOCK_COMMAND} {stack}`"
    locked: dict[str, tuple[PlatformImage, str]] = {}
    by_tag = []
    images = [image for image in platform_images(config) if not image.digest]
    findings = []
    if config.monitoring.install_prometheus_stack:
        chart = KUBE_PROMETHEUS_STACK_CHART
        chart_images = pinned_images(lock, chart)
        images += chart_images
        if not chart_images:
            # Binary Authorization is GKE's alone (cluster.create.gcp.binaryAuthorization).
            allowlist = (
                ", and Binary Authorization's allowlist is the one committed for an older release"
                if config.cloud is Cloud.GCP
                else ""
            )
            findings.append(
                Finding(
                    "warning",
                    SUBJECT,
                    f"The lock holds no image of {chart.name} {chart.version}, the pinned"
                    " chart (a chart pin moved, or the lock was never run for this stack): its"
                    f" images run by tag{allowlist}.",
                    f"Run {refresh} to read the chart's images and their digests.",
                )
            )
    for image in images:
        found = lock.get(IMAGES, image.key)
        if found is None or found.value is None:
            by_tag.append(image.key)
        else:
            locked[image.key] = (image, found.value)
    if by_tag:
        findings.append(
            Finding(
                "warning",
                SUBJECT,
                f"The lock has no digest for {', '.join(by_tag)}: they run by tag.",
                f"Run {refresh} to pin them.",
            )
        )
    if locked:
        # EKS's own images (the EFA device plugin's) are in an ECR registry that answers AWS
        # credentials only (gpu_platform/lock/ecr.py); a GKE stack deploys none.
        credentials = EcrCredentials() if config.cloud is Cloud.AWS else no_credentials
        findings += _drift(locked, deadline, refresh, plain_http, credentials)
    return findings


def _drift(
    locked: dict[str, tuple[PlatformImage, str]],
    deadline: Deadline,
    refresh: str,
    plain_http: Collection[str],
    credentials: Credentials,
) -> list[Finding]:
    sources = Sources(deadline)
    client = RegistryClient(sources, plain_http, credentials)

    def read() -> tuple[dict[str, str], list[str]]:
        live, unread = {}, []
        for key, (image, _) in sorted(locked.items()):
            try:
                live[key] = client.resolve(image.repository, image.tag).digest
            except (ImageNotResolved, SourceError) as error:
                unread.append(f"{key} ({error})")
        return live, unread

    try:
        live, unread = deadline.run(read, sources.calls)
    except DeadlinePassed as passed:
        return [
            Finding(
                "warning",
                SUBJECT,
                f"Not compared with the registries: {passed.explain('the registry')}",
                "Nothing, or run preflight again to compare them.",
            )
        ]
    moved = [
        f"{key} names {live[key]} now, the lock {digest}"
        for key, (_, digest) in sorted(locked.items())
        if key in live and live[key] != digest
    ]
    findings = []
    if moved:
        findings.append(
            Finding(
                "warning",
                SUBJECT,
                "Tags pushed again since the lock was written: " + "; ".join(moved) + ". The"
                " stack keeps running the locked images.",
                f"Review the new images, then run {refresh} to move to them.",
            )
        )
    if unread:
        findings.append(
            Finding(
                "warning",
                SUBJECT,
                "Not compared with their registries: " + "; ".join(unread) + ".",
                "Nothing: the stack runs the locked digests.",
            )
        )
    if not findings:
        findings.append(
            Finding("ok", SUBJECT, f"The {len(locked)} locked tags name their digests still.", "")
        )
    return findings

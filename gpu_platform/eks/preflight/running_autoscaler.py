"""Preflight on an EKS stack that does not install the cluster autoscaler (`autoscaler.install:
false`, where the cluster runs one already): which release runs, read from its Deployment through
the cluster's Kubernetes API.

A release older than the fix of kubernetes/autoscaler 66d2242f61 (December 2025) keeps a node
whose utilisation is `>=` its scale-down threshold (core/scaledown/eligibility/eligibility.go), so
a node group whose threshold is 0 never loses an empty node there. The platform's GPU pools use
a threshold that behaves the same under both comparisons (`EMPTY_NODE_THRESHOLD`), but the
cluster's own groups and flags may not; and a release of another Kubernetes minor than the
cluster's simulates another scheduler. Both are warnings, as is finding no autoscaler at all:
then nothing scales the GPU pools.

The API is reached as `aws eks get-token` and kubectl reach it: a bearer token that is a presigned
STS `GetCallerIdentity` URL carrying the cluster's name in the signed `x-k8s-aws-id` header
(aws-iam-authenticator's token format, `k8s-aws-v1.` and the URL in unpadded base64url), over
HTTPS checked against the cluster's own certificate authority.
"""

import base64
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import boto3
import requests
from botocore.exceptions import NoCredentialsError
from botocore.signers import RequestSigner

from gpu_platform.config import StackConfig, key_path
from gpu_platform.preflight.findings import Finding
from gpu_platform.preflight.queue_changes import KubeGet, found_or_none

TIMEOUT_SECONDS = 30
Timeout = float | tuple[float, float]
"""A request's timeout as requests takes it: seconds, or connect and read seconds."""
# The first release of each minor whose scale-down compares `utilization > threshold`
# (isNodeAtOrBelowUtilizationThreshold, eligibility.go at these tags of kubernetes/autoscaler);
# every release from 1.35.0 on has it, every one before 1.32 lacks it.
FIXED_RELEASES: Mapping[tuple[int, int], int] = {(1, 32): 6, (1, 33): 4, (1, 34): 3}
FIRST_FIXED_MINOR = (1, 35)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")
_TOKEN_PREFIX = "k8s-aws-v1."
_CLUSTER_NAME_HEADER = "x-k8s-aws-id"
# The autoscaler's image, whatever registry mirrors it (registry.k8s.io/autoscaling/
# cluster-autoscaler, an ECR copy, ...): the last part of its repository's path, the multi-arch
# manifest or one architecture's image, which each release pushes too (`make-image-arch-%` and
# `ALL_ARCH` in cluster-autoscaler/Makefile, cluster-autoscaler-1.35.2).
_AUTOSCALER_REPOSITORY = re.compile(r"^cluster-autoscaler(?:-(?:amd64|arm64|s390x))?$")


Deployments = Callable[[], Sequence[Mapping[str, Any]]]
"""Reads every Deployment of the cluster, as the Kubernetes API returns them."""
ConfigMaps = Callable[[str, str], Mapping[str, Any] | None]
"""Reads a ConfigMap (namespace, name) as the Kubernetes API returns it; None where none is."""


def removes_empty_nodes_at_zero(version: str) -> bool:
    """Whether an autoscaler release (`v1.33.4`) removes a node whose utilisation is 0 under a
    threshold of 0."""
    found = _VERSION.match(version)
    if found is None:
        raise ValueError(f"{version!r} is not a cluster autoscaler release")
    major, minor, patch = (int(part) for part in found.groups())
    if (major, minor) >= FIRST_FIXED_MINOR:
        return True
    first = FIXED_RELEASES.get((major, minor))
    return first is not None and patch >= first


def image_tag(image: str) -> tuple[str, str]:
    """An image reference's repository and tag (`""` without one), its digest left out."""
    name = image.partition("@")[0]
    repository, colon, tag = name.rpartition(":")
    if not colon or "/" in tag:  # no tag, or the colon was a registry's port
        return name, ""
    return repository, tag


def autoscaler_containers(
    deployments: Iterable[Mapping[str, Any]],
) -> list[tuple[str, Mapping[str, Any]]]:
    """`namespace/name` and container of every container that runs the cluster autoscaler."""
    found = []
    for deployment in deployments:
        metadata = deployment.get("metadata") or {}
        pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in pod.get("containers") or []:
            repository, _ = image_tag(container.get("image") or "")
            if _AUTOSCALER_REPOSITORY.match(repository.rpartition("/")[2]):
                found.append((f"{metadata.get('namespace')}/{metadata.get('name')}", container))
    return found


def autoscaler_images(deployments: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """`namespace/name` and image of every container that runs the cluster autoscaler."""
    return [(where, c["image"]) for where, c in autoscaler_containers(deployments)]


def running_autoscaler_finding(
    config: StackConfig, kubernetes_version: str, deployments: Deployments
) -> Finding:
    """The autoscaler already running in the cluster, against the fixed releases and the
    cluster's Kubernetes minor."""
    subject = f"cluster {config.cluster.name} autoscaler"
    install = key_path("autoscaler", "install")
    try:
        running = autoscaler_images(deployments())
    except requests.HTTPError as error:
        status = "an error" if error.response is None else error.response.status_code
        return _cannot_read(subject, f"the Kubernetes API answered {status}")
    except requests.RequestException as error:
        return _cannot_read(subject, f"the Kubernetes API could not be reached ({error})")
    if not running:
        return Finding(
            "warning",
            subject,
            f"No cluster autoscaler runs in the cluster, and {install} is false: nothing will"
            " scale the GPU pools up from zero or back down.",
            f"Install one, or set {install}: true.",
        )
    problems = []
    for where, image in running:
        _, tag = image_tag(image)
        version = _VERSION.match(tag)
        if version is None:
            problems.append(f"{where} runs {image}, whose release the check cannot tell")
            continue
        if not removes_empty_nodes_at_zero(tag):
            problems.append(
                f"{where} runs {image}, which keeps a node at a utilization equal to its"
                " scale-down threshold: a node group with threshold 0 never loses an empty node"
                " (kubernetes/autoscaler 66d2242f61)"
            )
        minor = ".".join(version.groups()[:2])
        if minor != kubernetes_version:
            problems.append(
                f"{where} runs {image}, made for Kubernetes {minor}: it simulates another"
                f" scheduler than the cluster's {kubernetes_version}"
            )
    if problems:
        return Finding(
            "warning",
            subject,
            "; ".join(problems) + ".",
            f"Run the cluster autoscaler release for Kubernetes {kubernetes_version} (1.32.6,"
            f" 1.33.4, 1.34.3, 1.35.0 or later), or set {install}: true.",
        )
    where, image = running[0]
    return Finding("ok", subject, f"{where} runs {image}.", "Nothing.")


def _cannot_read(subject: str, why: str) -> Finding:
    return Finding(
        "warning",
        subject,
        f"Cannot read the cluster's Deployments: {why}.",
        "Check the running cluster autoscaler's image by hand (kubectl get deployments -A"
        " -o wide); it should be 1.32.6, 1.33.4, 1.34.3, 1.35.0 or later.",
    )


def eks_token(session: boto3.Session, region: str, cluster_name: str) -> str:
    """A bearer token for the cluster's Kubernetes API, from the caller's AWS credentials."""
    credentials = session.get_credentials()
    if credentials is None:
        raise NoCredentialsError()
    sts = session.client("sts", region_name=region)
    signer = RequestSigner(
        sts.meta.service_model.service_id, region, "sts", "v4", credentials, session.events
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"{sts.meta.endpoint_url}/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {_CLUSTER_NAME_HEADER: cluster_name},
            "context": {},
        },
        region_name=region,
        # The API server accepts a token for 15 minutes whatever it says.
        expires_in=60,
        operation_name="",
    )
    encoded = base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return _TOKEN_PREFIX + encoded


def eks_deployments(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None = None,
) -> Deployments:
    """Every Deployment of the EKS cluster `cluster` (as DescribeCluster returns it), page by
    page, read when called."""

    def read() -> Sequence[Mapping[str, Any]]:
        found: list[Mapping[str, Any]] = []
        with eks_api(session, region, cluster, http) as get:
            params = {"limit": "500"}
            while True:
                response = get("/apis/apps/v1/deployments", params)
                response.raise_for_status()
                page = response.json()
                found += page.get("items") or []
                following = (page.get("metadata") or {}).get("continue")
                if not following:
                    return found
                params = {"limit": "500", "continue": following}

    return read


def eks_config_maps(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None = None,
) -> ConfigMaps:
    """A ConfigMap of the EKS cluster `cluster` by namespace and name, None where none is."""

    get = eks_get(session, region, cluster, http)
    return lambda namespace, name: get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")


def eks_get(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None = None,
    *,
    timeout: Timeout = TIMEOUT_SECONDS,
) -> KubeGet:
    """GETs of a path of the EKS cluster's Kubernetes API, as it answers; None for a 404."""

    def read(path: str) -> Mapping[str, Any] | None:
        with eks_api(session, region, cluster, http, timeout) as get:
            return found_or_none(get(path, {}))

    return read


ApiGet = Callable[[str, Mapping[str, str]], requests.Response]
"""GET of a path of the cluster's Kubernetes API with query parameters."""


@contextmanager
def eks_api(
    session: boto3.Session,
    region: str,
    cluster: Mapping[str, Any],
    http: requests.Session | None = None,
    timeout: Timeout = TIMEOUT_SECONDS,
) -> Iterator[ApiGet]:
    """GETs of the EKS cluster's Kubernetes API (as DescribeCluster returns the cluster), with
    a token from the caller's credentials, over HTTPS checked against the cluster's CA, each
    given up after `timeout` (seconds, or connect and read seconds)."""
    client = http or requests.Session()
    token = eks_token(session, region, cluster["name"])
    authority = base64.b64decode(cluster["certificateAuthority"]["data"])
    with tempfile.NamedTemporaryFile(suffix=".crt") as ca:
        ca.write(authority)
        ca.flush()

        def get(path: str, params: Mapping[str, str]) -> requests.Response:
            return client.get(
                f"{cluster['endpoint']}{path}",
                params=dict(params),
                headers={"Authorization": f"Bearer {token}"},
                verify=ca.name,
                timeout=timeout,
            )

        yield get

"""Preflight's reading of the cluster autoscaler a cluster runs itself: the releases that remove
an empty node at a threshold of 0, the findings, the EKS token and the paged Deployment list."""

import base64
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
import requests
from requests.adapters import BaseAdapter

from gpu_platform.config import StackConfig
from gpu_platform.eks.preflight.running_autoscaler import (
    autoscaler_images,
    eks_config_maps,
    eks_deployments,
    eks_token,
    removes_empty_nodes_at_zero,
    running_autoscaler_finding,
)
from gpu_platform.preflight.findings import Finding

SUBJECT = "cluster ml-dev autoscaler"


# core/scaledown/eligibility/eligibility.go of kubernetes/autoscaler: `Utilization >= threshold`
# keeps the node at cluster-autoscaler-1.32.5, 1.33.3, 1.34.2 (and every older tag);
# `Utilization > threshold` (66d2242f61) from 1.32.6, 1.33.4, 1.34.3 and 1.35.0.
@pytest.mark.parametrize(
    ("release", "removes"),
    [
        ("v1.31.5", False),
        ("v1.32.5", False),
        ("v1.32.6", True),
        ("v1.33.3", False),
        ("v1.33.4", True),
        ("v1.33.6", True),
        ("v1.34.2", False),
        ("v1.34.3", True),
        ("v1.35.0", True),
        ("v1.36.1", True),
    ],
)
def test_releases_that_remove_an_empty_node_at_threshold_zero(release: str, removes: bool) -> None:
    assert removes_empty_nodes_at_zero(release) is removes


def deployment(image: str, namespace: str = "kube-system", name: str = "ca") -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}},
    }


ECR_COPY = "123456789012.dkr.ecr.us-east-1.amazonaws.com/cluster-autoscaler:v1.35.2"


def test_autoscaler_images_are_found_by_repository_whatever_the_registry() -> None:
    found = autoscaler_images(
        [
            deployment("registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.3", name="a"),
            deployment(ECR_COPY),
            # Each release pushes an image per architecture beside the multi-arch one
            # (cluster-autoscaler/Makefile, `make-image-arch-%`, cluster-autoscaler-1.35.2).
            deployment("registry.k8s.io/autoscaling/cluster-autoscaler-arm64:v1.34.2", name="b"),
            deployment("registry.k8s.io/autoscaling/cluster-autoscaler-addon:v1.0.0"),
            deployment("nginx:1.27"),
        ]
    )

    assert found == [
        ("kube-system/a", "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.3"),
        (
            "kube-system/ca",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/cluster-autoscaler:v1.35.2",
        ),
        ("kube-system/b", "registry.k8s.io/autoscaling/cluster-autoscaler-arm64:v1.34.2"),
    ]


def test_an_autoscaler_before_the_fix_is_a_warning(own_autoscaler_stack: StackConfig) -> None:
    image = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0"
    old = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.2"

    finding = running_autoscaler_finding(own_autoscaler_stack, "1.34", lambda: [deployment(old)])

    assert finding == Finding(
        "warning",
        SUBJECT,
        f"kube-system/ca runs {old}, which keeps a node at a utilization equal to its scale-down"
        " threshold: a node group with threshold 0 never loses an empty node"
        " (kubernetes/autoscaler 66d2242f61).",
        "Run the cluster autoscaler release for Kubernetes 1.34 (1.32.6, 1.33.4, 1.34.3, 1.35.0"
        " or later), or set gpu-platform:autoscaler.install: true.",
    )
    assert running_autoscaler_finding(
        own_autoscaler_stack, "1.35", lambda: [deployment(image)]
    ) == Finding("ok", SUBJECT, f"kube-system/ca runs {image}.", "Nothing.")


def test_an_autoscaler_of_another_minor_is_a_warning(own_autoscaler_stack: StackConfig) -> None:
    image = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6"

    finding = running_autoscaler_finding(own_autoscaler_stack, "1.35", lambda: [deployment(image)])

    assert finding.severity == "warning"
    assert finding.message == (
        f"kube-system/ca runs {image}, made for Kubernetes 1.33: it simulates another scheduler"
        " than the cluster's 1.35."
    )


def test_no_autoscaler_at_all_is_a_warning(own_autoscaler_stack: StackConfig) -> None:
    finding = running_autoscaler_finding(own_autoscaler_stack, "1.35", lambda: [])

    assert finding == Finding(
        "warning",
        SUBJECT,
        "No cluster autoscaler runs in the cluster, and gpu-platform:autoscaler.install is false:"
        " nothing will scale the GPU pools up from zero or back down.",
        "Install one, or set gpu-platform:autoscaler.install: true.",
    )


def test_a_refused_list_is_a_warning_that_says_what_to_check(
    own_autoscaler_stack: StackConfig,
) -> None:
    def refused() -> Sequence[Mapping[str, Any]]:
        response = requests.Response()
        response.status_code = 403
        raise requests.HTTPError(response=response)

    finding = running_autoscaler_finding(own_autoscaler_stack, "1.35", refused)

    assert finding.severity == "warning"
    assert finding.message == (
        "Cannot read the cluster's Deployments: the Kubernetes API answered 403."
    )


def session() -> boto3.Session:
    return boto3.Session(
        region_name="us-east-1", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret"
    )


def test_the_token_is_a_presigned_get_caller_identity_naming_the_cluster() -> None:
    token = eks_token(session(), "us-east-1", "ml-dev")

    # aws-iam-authenticator pkg/token/token.go: `k8s-aws-v1.` and the presigned URL in unpadded
    # base64url, the cluster's name in the signed `x-k8s-aws-id` header.
    prefix, _, encoded = token.partition(".")
    assert prefix == "k8s-aws-v1"
    assert "=" not in encoded
    url = urlsplit(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())
    query = parse_qs(url.query)
    assert url.hostname == "sts.us-east-1.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"]
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/")


# The cluster as DescribeCluster returns it, its certificate authority in base64.
CLUSTER = {
    "name": "ml-dev",
    "endpoint": "https://abcdef.gr7.us-east-1.eks.amazonaws.com",
    "certificateAuthority": {"data": base64.b64encode(b"CA PEM").decode()},
}


class Pages(BaseAdapter):
    """Answers the Deployment list in two pages, recording each request."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[requests.PreparedRequest, str]] = []

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        self.requests.append((request, Path(kwargs["verify"]).read_text()))
        following = "continue=page-2" not in (request.url or "")
        body = {
            "items": [deployment("nginx:1.27", name="first" if following else "second")],
            "metadata": {"continue": "page-2"} if following else {},
        }
        response = requests.Response()
        response.status_code = 200
        response._content = json.dumps(body).encode()
        response.url = request.url or ""
        return response

    def close(self) -> None:
        pass


def test_deployments_are_read_page_by_page_with_the_token_against_the_clusters_ca() -> None:
    http = requests.Session()
    pages = Pages()
    http.mount("https://", pages)

    found = eks_deployments(session(), "us-east-1", CLUSTER, http)()

    assert [d["metadata"]["name"] for d in found] == ["first", "second"]
    (first, ca), (second, _) = pages.requests
    assert first.url == (
        "https://abcdef.gr7.us-east-1.eks.amazonaws.com/apis/apps/v1/deployments?limit=500"
    )
    assert second.url is not None and second.url.endswith("limit=500&continue=page-2")
    assert str(first.headers["Authorization"]).startswith("Bearer k8s-aws-v1.")
    assert ca == "CA PEM"


class OneConfigMap(BaseAdapter):
    """Answers a ConfigMap read: the priority expander's in kube-system, 404 elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        self.urls.append(request.url or "")
        response = requests.Response()
        found = "/namespaces/kube-system/" in (request.url or "")
        response.status_code = 200 if found else 404
        response._content = json.dumps(
            {"kind": "ConfigMap", "data": {"priorities": "10:\n  - '.*'\n"}}
            if found
            else {"kind": "Status", "reason": "NotFound", "code": 404}
        ).encode()
        response.url = request.url or ""
        return response

    def close(self) -> None:
        pass


def test_a_config_map_is_read_by_namespace_and_name_and_a_missing_one_is_none() -> None:
    http = requests.Session()
    answers = OneConfigMap()
    http.mount("https://", answers)
    read = eks_config_maps(session(), "us-east-1", CLUSTER, http)

    found = read("kube-system", "cluster-autoscaler-priority-expander")

    assert found is not None and found["data"] == {"priorities": "10:\n  - '.*'\n"}
    assert read("autoscaler", "cluster-autoscaler-priority-expander") is None
    assert answers.urls[0] == (
        "https://abcdef.gr7.us-east-1.eks.amazonaws.com/api/v1/namespaces/kube-system/configmaps/"
        "cluster-autoscaler-priority-expander"
    )

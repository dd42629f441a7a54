"""Images in Amazon ECR's private registries (EKS's own, the EFA device plugin's): read with an
ECR token where AWS credentials are at hand, left as they were with a warning where not."""

import base64
import http.server
import urllib.parse
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3.session
import pytest
import typer
from moto import mock_aws

from gpu_platform.cli import lock
from gpu_platform.config import Cloud
from gpu_platform.deadline import Deadline
from gpu_platform.lock import image_resolver
from gpu_platform.lock.ecr import ECR_HOST, EcrCredentials, NoCredentials
from gpu_platform.lock.lockfile import IMAGES, Lock, entry, load
from gpu_platform.lock.registry import ImageNotResolved, RegistryClient
from gpu_platform.lock.sources import Response, Sources
from gpu_platform.platform_images import EFA_DEVICE_PLUGIN_IMAGE, PlatformImage
from gpu_platform.preflight import images as preflight_images
from gpu_platform.preflight.findings import Finding
from tests.oci_registry import Answer, stand_in

DIGEST = "sha256:" + "4d" * 32
BASIC = base64.b64encode(b"AWS:a-password").decode()
# ECR's challenge to a call without credentials (ECR User Guide, "Private registry
# authentication": Basic authentication, user AWS).
CHALLENGE = 'Basic realm="https://602401143452.dkr.ecr.us-west-2.amazonaws.com/",service="ecr.amazonaws.com"'
EFA = f"{EFA_DEVICE_PLUGIN_IMAGE.repository}:{EFA_DEVICE_PLUGIN_IMAGE.tag}"


def ecr_stand_in(request: http.server.BaseHTTPRequestHandler) -> Answer:
    """An ECR registry: a manifest's digest to a call with its Basic credentials, 401 with
    ECR's challenge to any other."""
    if request.headers.get("Authorization") == f"Basic {BASIC}":
        index = "application/vnd.oci.image.index.v1+json"
        return 200, {"Docker-Content-Digest": DIGEST, "Content-Type": index}, b""
    return 401, {"WWW-Authenticate": CHALLENGE}, b""


@pytest.fixture
def no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_a_registry_asking_for_basic_credentials_is_sent_those_given_for_its_host() -> None:
    with stand_in(ecr_stand_in) as host:
        client = RegistryClient(
            Sources(Deadline(20)), {host}, lambda asked: BASIC if asked == host else None
        )
        found = client.resolve(f"{host}/eks/aws-efa-k8s-device-plugin", "v0.5.20")

    assert (found.digest, found.is_index) == (DIGEST, True)


def test_without_credentials_for_its_host_the_image_is_left_for_want_of_them() -> None:
    def none_at_hand(host: str) -> str | None:
        raise NoCredentials("no AWS credentials")

    with stand_in(ecr_stand_in) as host:
        client = RegistryClient(Sources(Deadline(20)), {host}, none_at_hand)
        with pytest.raises(ImageNotResolved) as refused:
            client.resolve(f"{host}/eks/aws-efa-k8s-device-plugin", "v0.5.20")

    assert (refused.value.problem, refused.value.detail) == ("credentials", "no AWS credentials")


def test_an_ecr_registry_takes_the_token_ecr_gives_in_its_region(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    credentials = EcrCredentials()

    with mock_aws():
        token = credentials("602401143452.dkr.ecr.us-west-2.amazonaws.com")

    # ECR API Reference, GetAuthorizationToken: a base64 `user:password`, the user `AWS`.
    assert token is not None and base64.b64decode(token).startswith(b"AWS:")
    assert credentials("registry.k8s.io") is None


def test_the_token_is_asked_for_with_preflights_timeouts_and_attempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    configs = []
    client = boto3.session.Session.client

    def recording(self: boto3.session.Session, *args: Any, **kwargs: Any) -> Any:
        configs.append(kwargs["config"])
        return client(self, *args, **kwargs)

    monkeypatch.setattr(boto3.session.Session, "client", recording)
    with mock_aws():
        EcrCredentials()("602401143452.dkr.ecr.us-west-2.amazonaws.com")

    # docs/deploy.md, "How long it takes": a connection given up after 5 s, an answer after
    # 15 s, up to 5 attempts in botocore's standard retry mode.
    [config] = configs
    assert (config.connect_timeout, config.read_timeout, config.retries) == (
        5,
        15,
        {"mode": "standard", "total_max_attempts": 5},
    )


def test_an_ecr_registry_without_aws_credentials_wants_them(no_aws_credentials: None) -> None:
    with pytest.raises(NoCredentials, match="takes AWS credentials only"):
        EcrCredentials()("602401143452.dkr.ecr.us-west-2.amazonaws.com")


def stand_in_registries(self: Sources, request: urllib.request.Request) -> Response:
    """Every registry's answer to a HEAD of a manifest: ECR's challenge from an ECR host, a
    digest from any other (whose anonymous access the registry tests cover)."""
    host = urllib.parse.urlsplit(request.full_url).hostname or ""
    if ECR_HOST.fullmatch(host):
        return Response(401, {"WWW-Authenticate": CHALLENGE}, b"")
    index = "application/vnd.oci.image.index.v1+json"
    return Response(200, {"Docker-Content-Digest": DIGEST, "Content-Type": index}, b"")


def test_lock_over_the_committed_stacks_warns_of_the_ecr_image_keeps_its_entry_and_succeeds(
    no_aws_credentials: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "gpu-platform.lock"
    Lock(path=path).with_entries(IMAGES, {EFA: entry(DIGEST, "https://an-earlier-run")}).save()
    monkeypatch.setenv("GPU_PLATFORM_LOCK", str(path))
    monkeypatch.setattr(Sources, "_send", stand_in_registries)
    monkeypatch.setattr(image_resolver, "chart_images_to_lock", lambda *read: {})

    # Returns: no exit 4, though prod's and karpenter-dev's EFA pools deploy EKS's plugin.
    lock.run([], check=False, timeout_seconds=60, resolvers=[image_resolver.RESOLVER])

    error = " ".join(capsys.readouterr().err.split())
    assert f'warning: left as it was, images["{EFA}"]: the registry is Amazon ECR\'s' in error
    assert "could not read" not in error
    images = load(path).section(IMAGES)
    assert images[EFA].source == "https://an-earlier-run"
    assert images["nvcr.io/nvidia/gpu-operator:v26.7.0"].value == DIGEST


def test_check_without_aws_credentials_names_the_ecr_image_and_does_not_say_up_to_date(
    no_aws_credentials: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "gpu-platform.lock"
    monkeypatch.setenv("GPU_PLATFORM_LOCK", str(path))
    monkeypatch.setattr(Sources, "_send", stand_in_registries)
    monkeypatch.setattr(image_resolver, "chart_images_to_lock", lambda *read: {})
    lock.run([], check=False, timeout_seconds=60, resolvers=[image_resolver.RESOLVER])
    capsys.readouterr()

    with pytest.raises(typer.Exit) as exited:
        lock.run([], check=True, timeout_seconds=60, resolvers=[image_resolver.RESOLVER])

    # 4, as preflight exits when it cannot check (gpu_platform/preflight/exit_codes.py).
    assert exited.value.exit_code == 4
    output = capsys.readouterr()
    assert f'warning: left as it was, images["{EFA}"]' in " ".join(output.err.split())
    assert " ".join(output.out.split()) == (
        "gpu-platform.lock is up to date except 1 fact not read (the warnings above)"
    )


def test_eks_preflight_compares_an_ecr_image_with_the_token_its_aws_credentials_get(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    def ecr(self: Sources, request: urllib.request.Request) -> Response:
        sent = str(request.get_header("Authorization") or "").removeprefix("Basic ")
        if sent and base64.b64decode(sent).startswith(b"AWS:"):
            index = "application/vnd.oci.image.index.v1+json"
            return Response(200, {"Docker-Content-Digest": DIGEST, "Content-Type": index}, b"")
        return Response(401, {"WWW-Authenticate": CHALLENGE}, b"")

    monkeypatch.setattr(Sources, "_send", ecr)
    image = PlatformImage(EFA_DEVICE_PLUGIN_IMAGE.repository, EFA_DEVICE_PLUGIN_IMAGE.tag, "EFA")
    monkeypatch.setattr(preflight_images, "platform_images", lambda config: [image])
    locked = Lock(path=tmp_path / "lock").with_entries(IMAGES, {EFA: entry(DIGEST, "https://e")})

    eks: Any = SimpleNamespace(
        cloud=Cloud.AWS, monitoring=SimpleNamespace(install_prometheus_stack=False)
    )
    with mock_aws():
        found = preflight_images.image_findings("prod", eks, Deadline(20), locked)

    assert found == [
        Finding("ok", "image digests", "The 1 locked tags name their digests still.", "")
    ]

"""The digest refresher against a registry played by a function: the OCI Distribution
Specification's manifest `HEAD` and the token challenge of Docker Hub and the other public
registries (Docker's "Token Authentication Specification")."""

import urllib.request
from collections.abc import Mapping

import pytest

from gpu_platform.image_digests import pinned_images, registry_of, resolve, with_digests

DIGEST = "sha256:" + "3c" * 32


class Registry:
    """A registry that wants a pull token, as Docker Hub does, and records what it was asked."""

    def __init__(self, digest: str = DIGEST, token_required: bool = True) -> None:
        self.digest = digest
        self.token_required = token_required
        self.requests: list[urllib.request.Request] = []

    def __call__(self, request: urllib.request.Request) -> tuple[int, Mapping[str, str], bytes]:
        self.requests.append(request)
        url = request.full_url
        if url.startswith("https://auth.example/token"):
            return 200, {}, b'{"token": "t0k"}'
        authorized = request.get_header("Authorization") == "Bearer t0k"
        if self.token_required and not authorized:
            challenge = 'Bearer realm="https://auth.example/token",service="registry.example"'
            return 401, {"Www-Authenticate": challenge}, b""
        return 200, {"Docker-Content-Digest": self.digest}, b""


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        ("docker.io/library/python", ("registry-1.docker.io", "library/python")),
        ("python", ("registry-1.docker.io", "library/python")),
        ("nvidia/cuda", ("registry-1.docker.io", "nvidia/cuda")),
        ("nvcr.io/nvidia/cuda", ("nvcr.io", "nvidia/cuda")),
        (
            "registry.k8s.io/autoscaling/cluster-autoscaler",
            ("registry.k8s.io", "autoscaling/cluster-autoscaler"),
        ),
    ],
)
def test_each_image_is_asked_of_its_registry(repository: str, expected: tuple[str, str]) -> None:
    assert registry_of(repository) == expected


def test_a_registry_that_wants_a_token_gets_an_anonymous_pull_token_first() -> None:
    registry = Registry()

    digest = resolve("nvcr.io/nvidia/cuda", "12.2.2-base-ubuntu22.04", registry)

    first, token, second = registry.requests
    assert digest == DIGEST
    assert (first.get_method(), first.full_url) == (
        "HEAD",
        "https://nvcr.io/v2/nvidia/cuda/manifests/12.2.2-base-ubuntu22.04",
    )
    assert token.full_url == (
        "https://auth.example/token?service=registry.example&scope=repository%3Anvidia%2Fcuda%3Apull"
    )
    assert second.get_header("Authorization") == "Bearer t0k"


def test_the_digest_asked_for_is_the_multi_platform_index() -> None:
    registry = Registry(token_required=False)

    resolve("registry.k8s.io/autoscaling/cluster-autoscaler", "v1.35.2", registry)

    (request,) = registry.requests
    accepted = str(request.get_header("Accept")).split(", ")
    assert accepted[:2] == [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]


def test_an_answer_without_a_sha256_digest_is_refused() -> None:
    with pytest.raises(RuntimeError, match="no sha256 digest"):
        resolve("python", "3.13.9-slim-trixie", Registry(digest="md5:abc", token_required=False))


def test_an_image_formatted_one_argument_a_line_is_found() -> None:
    source = 'A = ContainerImage(\n    "r/c",\n    "1.14.1",\n    "sha256:' + "ab" * 32 + '",\n)\n'

    assert pinned_images(source) == [("r/c", "1.14.1", "sha256:" + "ab" * 32)]


def test_digests_are_written_beside_the_tags_and_read_back() -> None:
    source = (
        'A = ContainerImage("docker.io/library/python", "3.13.9-slim-trixie")\n'
        f'B = ContainerImage("nvcr.io/nvidia/cuda", "12.2.2", "sha256:{"00" * 32}")\n'
    )
    digests = {
        ("docker.io/library/python", "3.13.9-slim-trixie"): DIGEST,
        ("nvcr.io/nvidia/cuda", "12.2.2"): DIGEST,
    }

    written = with_digests(source, digests)

    assert pinned_images(written) == [
        ("docker.io/library/python", "3.13.9-slim-trixie", DIGEST),
        ("nvcr.io/nvidia/cuda", "12.2.2", DIGEST),
    ]
    assert pinned_images(source)[0] == ("docker.io/library/python", "3.13.9-slim-trixie", None)

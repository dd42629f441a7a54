"""The image resolver against a real registry on loopback (tests/oci_registry.py): a tag to its
manifest's digest, a multi-platform image to its index's, a missing tag, a registry that never
answers; and against small stand-ins, what a real registry here cannot play: a registry that
wants credentials, one that hands out anonymous tokens (Docker Hub and the other public ones),
and throttling."""

import http.server
import urllib.request
from pathlib import Path

import pytest

from gpu_platform.deadline import Deadline, DeadlinePassed
from gpu_platform.lock.registry import ImageNotResolved, RegistryClient, ResolvedImage, registry_of
from gpu_platform.lock.sources import Sources, _Redirects
from tests.oci_registry import (
    OCI_INDEX,
    OCI_MANIFEST,
    Answer,
    Registry,
    running_registry,
    sha256,
    silent_server,
    stand_in,
)

DIGEST = "sha256:" + "3c" * 32


def resolve(host: str, repository: str, tag: str, seconds: float = 10) -> ResolvedImage:
    deadline = Deadline(seconds)
    sources = Sources(deadline)
    client = RegistryClient(sources, plain_http={host})
    return deadline.run(lambda: client.resolve(repository, tag), sources.calls)


def test_a_tag_resolves_to_the_digest_of_the_manifest_it_names(registry: Registry) -> None:
    manifest = registry.push_image("platform/reaper", "3.13.9", b"one layer")

    resolved = resolve(registry.host, f"{registry.host}/platform/reaper", "3.13.9")

    # A manifest's digest is the sha256 of its bytes as pushed (OCI image-spec descriptor.md).
    assert resolved.digest == sha256(manifest)
    assert (resolved.media_type, resolved.is_index) == (OCI_MANIFEST, False)
    assert resolved.source == f"http://{registry.host}/v2/platform/reaper/manifests/3.13.9"


def test_a_multi_platform_tag_resolves_to_its_index_not_a_platform_manifest(
    registry: Registry,
) -> None:
    index = registry.push_index("platform/autoscaler", "v1.35.2")

    resolved = resolve(registry.host, f"{registry.host}/platform/autoscaler", "v1.35.2")

    assert resolved.digest == sha256(index)
    assert (resolved.media_type, resolved.is_index) == (OCI_INDEX, True)


def test_a_tag_pushed_again_resolves_to_its_new_digest(registry: Registry) -> None:
    registry.push_image("platform/smoke", "12.2.2", b"first")
    second = registry.push_image("platform/smoke", "12.2.2", b"second")

    assert resolve(registry.host, f"{registry.host}/platform/smoke", "12.2.2").digest == sha256(
        second
    )


def test_a_missing_tag_is_reported_as_missing(registry: Registry) -> None:
    registry.push_image("platform/gate", "1.0.0", b"layer")

    with pytest.raises(ImageNotResolved) as missing:
        resolve(registry.host, f"{registry.host}/platform/gate", "9.9.9")

    assert missing.value.problem == "missing"
    assert "manifests/9.9.9 answered 404" in str(missing.value)


def test_a_registry_that_never_answers_is_given_up_at_the_deadline_naming_it() -> None:
    with silent_server() as host, pytest.raises(DeadlinePassed) as passed:
        resolve(host, f"{host}/platform/reaper", "3.13.9", seconds=1)

    assert passed.value.explain("the registry").startswith(
        f"http://{host} did not answer HEAD /v2/platform/reaper/manifests/3.13.9 within the 1 s"
    )


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        ("docker.io/library/python", ("registry-1.docker.io", "library/python")),
        ("python", ("registry-1.docker.io", "library/python")),
        ("nvidia/cuda", ("registry-1.docker.io", "nvidia/cuda")),
        ("nvcr.io/nvidia/cuda", ("nvcr.io", "nvidia/cuda")),
        ("localhost:5000/cuda", ("localhost:5000", "cuda")),
    ],
)
def test_each_image_is_asked_of_its_registry(repository: str, expected: tuple[str, str]) -> None:
    assert registry_of(repository) == expected


def test_a_registry_that_wants_credentials_is_reported_as_such(tmp_path: Path) -> None:
    with (
        running_registry(tmp_path, private=True) as private,
        pytest.raises(ImageNotResolved) as refused,
    ):
        resolve(private.host, f"{private.host}/team/image", "1.0")

    assert refused.value.problem == "auth"
    # distribution's htpasswd challenge (registry/auth/htpasswd/access.go at v2.8.2).
    assert 'Basic realm="private"' in refused.value.detail


def test_an_anonymous_pull_token_is_asked_of_the_challenges_realm_then_sent() -> None:
    asked: list[tuple[str, str, str]] = []

    def registry(request: http.server.BaseHTTPRequestHandler) -> Answer:
        asked.append((request.command, request.path, request.headers.get("Authorization", "")))
        if request.path.startswith("/token"):
            return 200, {}, b'{"token": "t0k"}'
        if request.headers.get("Authorization") != "Bearer t0k":
            realm = f"http://{request.headers['Host']}/token"
            return 401, {"WWW-Authenticate": f'Bearer realm="{realm}",service="reg"'}, b""
        return 200, {"Docker-Content-Digest": DIGEST, "Content-Type": OCI_INDEX}, b""

    with stand_in(registry) as host:
        resolved = resolve(host, f"{host}/nvidia/cuda", "12.2.2")

    assert resolved.digest == DIGEST
    assert asked == [
        ("HEAD", "/v2/nvidia/cuda/manifests/12.2.2", ""),
        ("GET", "/token?service=reg&scope=repository%3Anvidia%2Fcuda%3Apull", ""),
        ("HEAD", "/v2/nvidia/cuda/manifests/12.2.2", "Bearer t0k"),
    ]


@pytest.mark.parametrize(
    ("challenge", "token_request"),
    [
        # RFC 7235 section 2.1: a parameter's value is a token or a quoted-string; gcr.io sends
        # `service` as a bare token (cloudflare/serverless-registry#122).
        (
            'Bearer realm="{realm}",service=gcr.io',
            "/token?service=gcr.io&scope=repository%3Anvidia%2Fcuda%3Apull",
        ),
        # nvcr.io's older challenge names the realm with its query in it: the query is kept,
        # the rest joined with `&`, the scope not asked twice.
        (
            'Bearer realm="{realm}?scope=repository:nvidia/cuda:pull",service="nvcr"',
            "/token?scope=repository:nvidia/cuda:pull&service=nvcr",
        ),
    ],
)
def test_a_challenge_with_bare_values_or_a_realm_with_a_query_asks_for_the_token_as_meant(
    challenge: str, token_request: str
) -> None:
    asked: list[str] = []

    def registry(request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.path.startswith("/token"):
            asked.append(request.path)
            return 200, {}, b'{"token": "t0k"}'
        if request.headers.get("Authorization") != "Bearer t0k":
            realm = f"http://{request.headers['Host']}/token"
            return 401, {"WWW-Authenticate": challenge.format(realm=realm)}, b""
        return 200, {"Docker-Content-Digest": DIGEST, "Content-Type": OCI_INDEX}, b""

    with stand_in(registry) as host:
        assert resolve(host, f"{host}/nvidia/cuda", "12.2.2").digest == DIGEST

    assert asked == [token_request]


def test_a_token_realm_that_refuses_an_anonymous_token_is_an_auth_problem() -> None:
    def registry(request: http.server.BaseHTTPRequestHandler) -> Answer:
        if request.path.startswith("/token"):
            return 401, {}, b'{"details": "incorrect username or password"}'
        realm = f"http://{request.headers['Host']}/token"
        return 401, {"WWW-Authenticate": f'Bearer realm="{realm}"'}, b""

    with stand_in(registry) as host, pytest.raises(ImageNotResolved) as refused:
        resolve(host, f"{host}/private/image", "1.0")

    assert refused.value.problem == "auth"
    assert "gave no anonymous pull token (401)" in refused.value.detail


def test_throttling_is_retried_within_the_deadline() -> None:
    answers = [
        (429, {"Retry-After": "0"}, b""),
        (200, {"Docker-Content-Digest": DIGEST, "Content-Type": OCI_MANIFEST}, b""),
    ]
    with stand_in(lambda _: answers.pop(0)) as host:
        assert resolve(host, f"{host}/library/python", "3.13.9-slim-trixie").digest == DIGEST


def test_an_answer_without_a_sha256_digest_is_refused() -> None:
    headers = {"Docker-Content-Digest": "md5:abc", "Content-Type": OCI_MANIFEST}
    with (
        stand_in(lambda _: (200, headers, b"")) as host,
        pytest.raises(ImageNotResolved, match="no sha256 digest"),
    ):
        resolve(host, f"{host}/library/python", "3.13.9-slim-trixie")


def test_without_the_digest_header_the_digest_is_the_manifests_own() -> None:
    # The header is a SHOULD of the distribution spec ("Pulling manifests").
    body = b'{"schemaVersion": 2}'
    with stand_in(lambda _: (200, {"Content-Type": OCI_MANIFEST}, body)) as host:
        assert resolve(host, f"{host}/library/python", "3.13").digest == sha256(body)


def test_a_redirect_keeps_the_head_and_sends_no_credentials_to_another_host() -> None:
    # registry.k8s.io answers with a redirect to a regional backend; CPython's own redirect
    # handler (Lib/urllib/request.py, HTTPRedirectHandler.redirect_request, 3.11) would make
    # the HEAD a GET and carry `Authorization` to the other host.
    asked: list[tuple[str, str]] = []

    def backend(request: http.server.BaseHTTPRequestHandler) -> Answer:
        asked.append((request.command, request.headers.get("Authorization", "")))
        return 200, {"Docker-Content-Digest": DIGEST, "Content-Type": OCI_INDEX}, b""

    with stand_in(backend) as other:
        port = other.rpartition(":")[2]

        def front(request: http.server.BaseHTTPRequestHandler) -> Answer:
            location = f"http://localhost:{port}{request.path}"
            return 307, {"Location": location}, b""

        with stand_in(front) as host:
            sources = Sources(Deadline(10))
            answer = sources.get(
                f"http://{host}/v2/pause/manifests/3.10",
                "a manifest",
                {"Authorization": "Bearer t0k"},
                "HEAD",
            )

    assert (answer.status, asked) == (200, [("HEAD", "")])


@pytest.mark.parametrize(
    ("redirect", "authorization"),
    [
        ("https://registry.example/v2/pause/manifests/3.10?backend=1", "Bearer t0k"),
        # From HTTPS to plain HTTP on the same host the token would travel in the clear
        # (requests' Session.should_strip_auth drops it on a scheme change too).
        ("http://registry.example/v2/pause/manifests/3.10", None),
    ],
)
def test_a_redirect_on_the_same_host_keeps_credentials_over_https_only(
    redirect: str, authorization: str | None
) -> None:
    request = urllib.request.Request(
        "https://registry.example/v2/pause/manifests/3.10",
        headers={"Authorization": "Bearer t0k"},
        method="HEAD",
    )

    redirected = _Redirects().redirect_request(request, None, 307, "", {}, redirect)

    assert redirected is not None and redirected.get_method() == "HEAD"
    assert redirected.get_header("Authorization") == authorization


def test_a_manifest_neither_an_index_nor_an_image_is_refused() -> None:
    # A Docker schema 1 manifest (distribution-spec v1.1.0 lists only the OCI and Docker v2
    # types the resolver asks for; a registry may still answer another).
    schema1 = "application/vnd.docker.distribution.manifest.v1+prettyjws"
    headers = {"Docker-Content-Digest": DIGEST, "Content-Type": schema1}
    with (
        stand_in(lambda _: (200, headers, b"")) as host,
        pytest.raises(ImageNotResolved) as refused,
    ):
        resolve(host, f"{host}/library/python", "3.13")

    assert refused.value.problem == "answer"
    assert refused.value.detail.endswith(
        f"answered a {schema1} manifest, neither an image index nor an image manifest"
    )

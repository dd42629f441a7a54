"""Pin each image of `gpu_platform/versions.py` to the digest its tag names now:

    python -m gpu_platform.image_digests          # write the digests into versions.py
    python -m gpu_platform.image_digests --check  # exit 1 where one is missing or moved

For each `ContainerImage(...)` of versions.py it asks the image's registry, through the
registry API every registry serves (the OCI Distribution Specification, "Pulling manifests"),
for the manifest the tag names: a `HEAD` of `/v2/<name>/manifests/<tag>` that accepts image
indexes (the multi-platform manifest lists a node resolves to its own platform's image) and
single manifests, whose `Docker-Content-Digest` header is the digest. A registry that wants a
token answers 401 with `WWW-Authenticate: Bearer realm=...,service=...,scope=...`; an anonymous
`GET` of that realm gives a pull token for public images (Docker Hub, registry.k8s.io, nvcr.io,
public.ecr.aws alike).

A tag moves when its publisher pushes it again; the digest does not. Run this when a tag is
changed in versions.py, and review the digest it writes like any other pin.
"""

import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

VERSIONS_FILE = Path(__file__).with_name("versions.py")
ACCEPT = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# `ContainerImage("repository", "tag")`, with or without a digest after them, on one line or
# one argument a line with a trailing comma (as ruff formats a long one).
_PINNED = re.compile(
    r'ContainerImage\(\s*"(?P<repository>[^"]+)",\s*"(?P<tag>[^"]+)"'
    r'(?P<digest>,\s*"sha256:[0-9a-f]{64}")?,?\s*\)'
)
# Docker Hub's registry, for images named without a registry or with `docker.io`.
_DOCKER_HUB = "registry-1.docker.io"

Fetch = Callable[[urllib.request.Request], tuple[int, Mapping[str, str], bytes]]


def _fetch(request: urllib.request.Request) -> tuple[int, Mapping[str, str], bytes]:
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def registry_of(repository: str) -> tuple[str, str]:
    """The registry host and the repository's name there."""
    host, _, name = repository.partition("/")
    if "." not in host and ":" not in host and host != "localhost":
        return _DOCKER_HUB, repository if "/" in repository else f"library/{repository}"
    if host == "docker.io":
        return _DOCKER_HUB, name
    return host, name


def _bearer_challenge(header: str) -> dict[str, str]:
    scheme, _, params = header.partition(" ")
    if scheme.lower() != "bearer":
        raise RuntimeError(f"the registry asks for {scheme} authentication, not a token")
    return dict(re.findall(r'(\w+)="([^"]*)"', params))


def resolve(repository: str, tag: str, fetch: Fetch = _fetch, scheme: str = "https") -> str:
    """The digest of the manifest `repository:tag` names now."""
    host, name = registry_of(repository)
    url = f"{scheme}://{host}/v2/{name}/manifests/{urllib.parse.quote(tag)}"
    status, headers, _ = fetch(
        urllib.request.Request(url, method="HEAD", headers={"Accept": ACCEPT})
    )
    if status == 401:
        challenge = _bearer_challenge(_header(headers, "WWW-Authenticate"))
        query = {k: v for k, v in challenge.items() if k in ("service", "scope")}
        query.setdefault("scope", f"repository:{name}:pull")
        realm = f"{challenge['realm']}?{urllib.parse.urlencode(query)}"
        token_status, _, body = fetch(urllib.request.Request(realm))
        if token_status != 200:
            raise RuntimeError(f"{realm} gave no token ({token_status})")
        answer = json.loads(body)
        token = answer.get("token") or answer.get("access_token")
        headers_with_token = {"Accept": ACCEPT, "Authorization": f"Bearer {token}"}
        status, headers, _ = fetch(
            urllib.request.Request(url, method="HEAD", headers=headers_with_token)
        )
    if status != 200:
        raise RuntimeError(f"{repository}:{tag}: the registry answered {status}")
    digest = _header(headers, "Docker-Content-Digest")
    if not DIGEST.fullmatch(digest):
        raise RuntimeError(f"{repository}:{tag}: no sha256 digest in the answer ({digest!r})")
    return digest


def _header(headers: Mapping[str, str], name: str) -> str:
    return next((v for k, v in headers.items() if k.lower() == name.lower()), "")


def pinned_images(source: str) -> list[tuple[str, str, str | None]]:
    """(repository, tag, digest or None) of every `ContainerImage` in versions.py's source."""
    return [
        (m["repository"], m["tag"], m["digest"].split('"')[1] if m["digest"] else None)
        for m in _PINNED.finditer(source)
    ]


def with_digests(source: str, digests: Mapping[tuple[str, str], str]) -> str:
    """versions.py's source with each image's digest set to `digests[(repository, tag)]`."""

    def pin(match: re.Match[str]) -> str:
        digest = digests[(match["repository"], match["tag"])]
        return f'ContainerImage("{match["repository"]}", "{match["tag"]}", "{digest}")'

    return _PINNED.sub(pin, source)


def main(argv: list[str], fetch: Fetch = _fetch) -> int:
    source = VERSIONS_FILE.read_text()
    images = pinned_images(source)
    digests = {(repository, tag): resolve(repository, tag, fetch) for repository, tag, _ in images}
    moved = [
        f"{repository}:{tag} is {digests[(repository, tag)]}, pinned {digest}"
        for repository, tag, digest in images
        if digest != digests[(repository, tag)]
    ]
    if "--check" in argv:
        print("\n".join(moved) or "Every image is pinned to the digest its tag names.")
        return 1 if moved else 0
    VERSIONS_FILE.write_text(with_digests(source, digests))
    print("\n".join(moved) or "No digest changed.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

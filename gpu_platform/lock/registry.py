"""The digest an image's tag names now, from the image's registry: what `gpu-platform lock`
records for every image a stack deploys.

Every registry serves the OCI Distribution Specification's API ("Pulling manifests",
https://github.com/opencontainers/distribution-spec/blob/v1.1.0/spec.md): a `HEAD` of
`/v2/<name>/manifests/<tag>` answers the digest of the manifest the tag names in its
`Docker-Content-Digest` header, without the body and, on Docker Hub, without counting against
its pull rate limit. The `Accept` header lists image indexes (the multi-platform manifest lists
a node resolves to its own platform's image) first, so a multi-arch image resolves to its
index, the one digest every node of every architecture can pull by; a single-platform image to
its manifest. A registry that wants a token answers 401 with `WWW-Authenticate: Bearer
realm=...,service=...,scope=...` (Docker's "Token Authentication Specification"); an anonymous
`GET` of that realm gives a pull token for public images (Docker Hub, registry.k8s.io,
nvcr.io, public.ecr.aws alike). A registry that answers `WWW-Authenticate: Basic` wants a user's
credentials: only those `credentials` gives for its host are sent (an Amazon ECR registry's
token, gpu_platform/lock/ecr.py); with none, the image is reported, not resolved.

Calls go through the lock's `Sources`, with preflight's deadline rules: each one reported,
throttling, server errors and no answer tried again, the whole bounded by `Deadline.run`.
"""

import hashlib
import json
import re
import urllib.parse
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Literal

from gpu_platform.lock.ecr import CredentialsRefused, NoCredentials
from gpu_platform.lock.sources import Response, Sources

INDEX_MEDIA_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
MANIFEST_MEDIA_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
ACCEPT = ", ".join((*INDEX_MEDIA_TYPES, *MANIFEST_MEDIA_TYPES))
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# Docker Hub's registry, for images named without a registry or with `docker.io`.
_DOCKER_HUB = "registry-1.docker.io"

Problem = Literal["missing", "auth", "credentials", "answer"]
Credentials = Callable[[str], str | None]
"""Basic credentials (base64 `user:password`) for a registry host, None where none are known;
raises NoCredentials where the host wants some that are not at hand."""


def no_credentials(host: str) -> str | None:
    return None


@dataclass(frozen=True)
class ResolvedImage:
    """What a registry answered for `repository:tag`."""

    repository: str
    tag: str
    digest: str
    """`sha256:<64 hex>` of the manifest the tag names."""
    media_type: str
    """The manifest's media type: an image index (multi-platform) or a single manifest."""
    source: str
    """The URL the digest was read from."""

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_MEDIA_TYPES


class ImageNotResolved(Exception):
    """A registry's answer that names no digest for `repository:tag`: the tag or repository is
    not there (`missing`), the registry wants credentials the resolver does not send (`auth`),
    credentials it could send were not at hand (`credentials`: left to a run that has them), or
    its answer is one the resolver cannot read (`answer`)."""

    def __init__(self, repository: str, tag: str, problem: Problem, detail: str):
        self.repository = repository
        self.tag = tag
        self.problem = problem
        self.detail = detail
        super().__init__(f"{repository}:{tag}: {detail}")


def registry_of(repository: str) -> tuple[str, str]:
    """The registry host and the repository's name there."""
    host, _, name = repository.partition("/")
    if "." not in host and ":" not in host and host != "localhost":
        return _DOCKER_HUB, repository if "/" in repository else f"library/{repository}"
    if host == "docker.io":
        return _DOCKER_HUB, name
    return host, name


class RegistryClient:
    """Anonymous, read-only calls to image registries through `sources`. `plain_http` names
    registries (`host:port`) asked over HTTP rather than HTTPS: a registry on this machine's
    loopback, as tests run one; every other is asked over HTTPS. `credentials` gives those a
    registry asking for Basic authentication takes."""

    def __init__(
        self,
        sources: Sources,
        plain_http: Collection[str] = (),
        credentials: Credentials = no_credentials,
    ):
        self.sources = sources
        self.plain_http = frozenset(plain_http)
        self.credentials = credentials
        self._authorizations: dict[tuple[str, str], str] = {}

    def resolve(self, repository: str, tag: str) -> ResolvedImage:
        """The digest of the manifest `repository:tag` names now. ImageNotResolved where the
        registry names none; SourceError where it cannot be reached."""
        url, response = self._answer("HEAD", repository, tag, f"manifests/{tag}", ACCEPT)
        digest = _header(response, "Docker-Content-Digest")
        media_type = _header(response, "Content-Type").partition(";")[0].strip()
        if not digest:
            # The header is a SHOULD of the spec: without it, the digest is the body's.
            url, response = self._answer("GET", repository, tag, f"manifests/{tag}", ACCEPT)
            digest = "sha256:" + hashlib.sha256(response.body).hexdigest()
            media_type = _header(response, "Content-Type").partition(";")[0].strip()
        if not DIGEST.fullmatch(digest):
            raise ImageNotResolved(
                repository, tag, "answer", f"{url} answered no sha256 digest ({digest!r})"
            )
        if media_type not in (*INDEX_MEDIA_TYPES, *MANIFEST_MEDIA_TYPES):
            raise ImageNotResolved(
                repository,
                tag,
                "answer",
                f"{url} answered a {media_type or 'untyped'} manifest"
                ", neither an image index nor an image manifest",
            )
        return ResolvedImage(repository, tag, digest, media_type, url)

    def read(self, repository: str, path: str, accept: str) -> tuple[bytes, str]:
        """The body of `/v2/<name>/<path>` (`manifests/<reference>`, `blobs/<digest>`) in the
        repository's registry, and its URL; ImageNotResolved or SourceError as `resolve`."""
        url, response = self._answer("GET", repository, path, path, accept)
        return response.body, url

    def _answer(
        self, method: str, repository: str, tag: str, path: str, accept: str
    ) -> tuple[str, Response]:
        """The registry's 200 answer to `/v2/<name>/<path>`, with the credentials or the
        anonymous token its challenge asks for; ImageNotResolved for any other."""
        host, name = registry_of(repository)
        scheme = "http" if host in self.plain_http else "https"
        kind, _, reference = path.partition("/")
        url = f"{scheme}://{host}/v2/{name}/{kind}/{urllib.parse.quote(reference, safe=':')}"
        response = self._ask(method, url, host, name, accept)
        if response.status == 401:
            self._authorizations[(host, name)] = self._authorization(
                repository, tag, host, name, response
            )
            response = self._ask(method, url, host, name, accept)
        problem = _problem(repository, tag, url, response)
        if problem is not None:
            raise problem
        return url, response

    def _ask(self, method: str, url: str, host: str, name: str, accept: str) -> Response:
        headers = {"Accept": accept}
        authorization = self._authorizations.get((host, name))
        if authorization:
            headers["Authorization"] = authorization
        return self.sources.get(url, f"{method} {urllib.parse.urlsplit(url).path}", headers, method)

    def _authorization(
        self, repository: str, tag: str, host: str, name: str, answer: Response
    ) -> str:
        """The `Authorization` the registry's challenge asks for: the Basic credentials
        `credentials` has for the host, or an anonymous pull token from the realm it names."""
        challenge = _header(answer, "WWW-Authenticate")
        scheme, _, params = challenge.partition(" ")
        if scheme.lower() == "basic":
            try:
                basic = self.credentials(host)
            except NoCredentials as error:
                raise ImageNotResolved(repository, tag, "credentials", str(error)) from error
            except CredentialsRefused as error:
                raise ImageNotResolved(repository, tag, "auth", str(error)) from error
            if basic:
                return f"Basic {basic}"
        fields = _auth_params(params)
        if scheme.lower() != "bearer" or "realm" not in fields:
            raise ImageNotResolved(
                repository,
                tag,
                "auth",
                f"the registry asks for credentials ({challenge or 'no challenge'}), not an"
                " anonymous token: the resolver reads public images only",
            )
        realm = _token_url(fields, name)
        response = self.sources.get(realm, "an anonymous pull token")
        token = ""
        if response.status == 200:
            try:
                body = json.loads(response.body)
            except ValueError:
                body = {}
            token = str(body.get("token") or body.get("access_token") or "")
        if not token:
            raise ImageNotResolved(
                repository,
                tag,
                "auth",
                f"{fields['realm']} gave no anonymous pull token ({response.status}): the"
                " image is private, or the registry wants credentials",
            )
        return f"Bearer {token}"


_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
# RFC 7235 section 2.1: `auth-param = token BWS "=" BWS ( token / quoted-string )`. A bare value
# is read up to the next comma or space, as a realm URL is sent bare by some registries though
# it is no token; gcr.io sends `service` bare (cloudflare/serverless-registry#122).
_AUTH_PARAM = re.compile(rf'({_TOKEN})[ \t]*=[ \t]*(?:"((?:[^"\\]|\\.)*)"|([^,\s"]+))')


def _auth_params(params: str) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate` challenge, names in lower case (RFC 7235:
    case-insensitive), quoted-string values unescaped."""
    return {
        name.lower(): re.sub(r"\\(.)", r"\1", quoted) if bare == "" else bare
        for name, quoted, bare in _AUTH_PARAM.findall(params)
    }


def _token_url(fields: dict[str, str], name: str) -> str:
    """The URL of an anonymous pull token: the challenge's realm, asked for its `service` and
    `scope` (the image's repository, pull, where the challenge names none). A realm that
    carries a query already (nvcr.io's older challenges: `realm="https://nvcr.io/proxy_auth?
    scope=..."`) keeps it, the others joined with `&`, none asked twice."""
    realm = urllib.parse.urlsplit(fields["realm"])
    carried = dict(urllib.parse.parse_qsl(realm.query, keep_blank_values=True))
    query = {k: v for k, v in fields.items() if k in ("service", "scope") and k not in carried}
    if "scope" not in carried:
        query.setdefault("scope", f"repository:{name}:pull")
    joined = "&".join(part for part in (realm.query, urllib.parse.urlencode(query)) if part)
    return urllib.parse.urlunsplit(realm._replace(query=joined))


def _problem(repository: str, tag: str, url: str, response: Response) -> ImageNotResolved | None:
    status = response.status
    if status == 200:
        return None
    if status == 404:
        return ImageNotResolved(
            repository, tag, "missing", f"{url} answered 404: no such tag or repository"
        )
    if status in (401, 403):
        return ImageNotResolved(
            repository,
            tag,
            "auth",
            f"{url} answered {status} with a pull token: the image is private, or the"
            " registry wants credentials",
        )
    return ImageNotResolved(repository, tag, "answer", f"{url} answered {status}")


def _header(response: Response, name: str) -> str:
    return next((v for k, v in response.headers.items() if k.lower() == name.lower()), "")

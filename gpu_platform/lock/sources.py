"""Reading a fact's source over HTTP for `gpu-platform lock`, with preflight's rules: each call
bounded by the command's deadline, tried again on no answer, throttling or a server error, and
reported as it goes (`Calls`), so that a deadline that passes names the source that did not
answer (gpu_platform/deadline.py)."""

import email.utils
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpu_platform.deadline import MAX_ATTEMPTS, Calls, Deadline

USER_AGENT = "gpu-platform-lock"
_RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
_THROTTLED_STATUSES = frozenset({429, 503})
_BACKOFF_SECONDS = (0.0, 2.0, 4.0, 8.0)
"""Between tries, as urllib3's Retry waits with backoff_factor 1 (as preflight's GKE calls)."""


class SourceError(Exception):
    """A source that gave no usable answer: no connection, or a server error every time."""


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass
class Sources:
    """The HTTP client the resolvers read their sources with."""

    deadline: Deadline
    calls: Calls = field(default_factory=Calls)

    def get(
        self,
        url: str,
        api: str,
        headers: Mapping[str, str] | None = None,
        method: str = "GET",
    ) -> Response:
        """The answer of `url`, whatever its status, once it is not one worth trying again (or
        the last try's); SourceError where no try got an answer. `api` names the call in
        messages (`gke-to-cos.json`)."""
        request_headers = {"User-Agent": USER_AGENT, **(headers or {})}
        failure = ""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            self.calls.sent(api, url, attempt)
            request = urllib.request.Request(url, headers=request_headers, method=method)
            try:
                response = self._send(request)
            except (urllib.error.URLError, OSError) as error:
                reason = getattr(error, "reason", error)
                failure = f"no answer from {url}: {reason}"
                wait = _BACKOFF_SECONDS[min(attempt, len(_BACKOFF_SECONDS)) - 1]
            else:
                throttled = response.status in _THROTTLED_STATUSES
                self.calls.answered(throttled)
                if response.status not in _RETRIED_STATUSES or attempt == MAX_ATTEMPTS:
                    return response
                failure = f"{url} answered {response.status}"
                wait = (
                    _retry_after(response.headers)
                    or _BACKOFF_SECONDS[min(attempt, len(_BACKOFF_SECONDS)) - 1]
                )
            if attempt < MAX_ATTEMPTS:
                time.sleep(min(wait, self.deadline.remaining()))
        raise SourceError(f"{failure} ({MAX_ATTEMPTS} attempts)")

    def _send(self, request: urllib.request.Request) -> Response:
        # urlopen's one timeout bounds the connection and each read; the deadline bounds the
        # whole (Deadline.run).
        timeout = self.deadline.read_timeout
        try:
            with _OPENER.open(request, timeout=timeout) as answer:
                return Response(answer.status, dict(answer.headers), answer.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, dict(error.headers or {}), error.read())


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked to wait (`Retry-After`, in seconds or as a date)."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    if value.strip().isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Redirects that keep the request's method, and send its credentials to its own host
    only. CPython's handler (Lib/urllib/request.py, HTTPRedirectHandler.redirect_request, 3.11
    to 3.13) builds the new request without a method, so a HEAD becomes a GET, and copies
    every header but the content ones, `Authorization` included, to whichever host the
    redirect names; registries redirect to other hosts (registry.k8s.io to its regional
    backends, Docker Hub to its blob storage), and a token sent over HTTPS must not leave it
    in the clear."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        redirected = super().redirect_request(req, fp, code, msg, headers, newurl)
        if redirected is None:
            return None
        kept = dict(redirected.headers)
        to, came_from = urllib.parse.urlsplit(newurl), urllib.parse.urlsplit(req.full_url)
        # Nor over plain HTTP from HTTPS, on the same host too: as requests' should_strip_auth.
        if to.netloc != came_from.netloc or (came_from.scheme, to.scheme) == ("https", "http"):
            kept = {k: v for k, v in kept.items() if k.lower() != "authorization"}
        return urllib.request.Request(
            redirected.full_url,
            headers=kept,
            origin_req_host=req.origin_req_host,
            unverifiable=True,
            method=req.get_method(),
        )


_OPENER = urllib.request.build_opener(_Redirects)

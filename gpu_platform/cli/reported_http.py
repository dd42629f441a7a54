"""The transport of the commands' HTTP calls (preflight's APIs, `gpu-platform lock`'s sources):
requests' adapter reporting each request to the deadline's `Calls`, and urllib3's Retry held to
the deadline (`gpu_platform/cli/deadline.py`)."""

from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import MaxRetryError
from urllib3.util.retry import Retry

from gpu_platform.cli.deadline import MAX_ATTEMPTS, Calls, Deadline

THROTTLED_STATUS = 429
RETRIED_STATUSES = (THROTTLED_STATUS, 500, 502, 503, 504)
"""Throttling and the server errors that heal within seconds (Google's "Retry failed requests"
and the OCI Distribution Specification's registries alike: 429 and 5xx)."""


def throttled_by_status(status: int, body: bytes) -> bool:
    """Whether an answer is throttling, by its status alone (429)."""
    return status == THROTTLED_STATUS


class ReportedAdapter(HTTPAdapter):
    """requests' own transport, reporting each request it sends to `calls`, and whether it was
    answered, throttled (`throttled`) or not."""

    def __init__(
        self,
        calls: Calls,
        max_retries: Retry | int = 0,
        throttled: Callable[[int, bytes], bool] = throttled_by_status,
    ):
        super().__init__(max_retries=max_retries)
        self._calls = calls
        self._throttled = throttled

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        url = str(request.url)
        self._calls.sent(f"{request.method} {urlsplit(url).path}", url)
        response = self._send(request, *args, **kwargs)
        self._calls.answered(throttled=self._throttled(response.status_code, response.content))
        return response

    def _send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        return super().send(request, *args, **kwargs)


class DeadlineRetry(Retry):
    """urllib3's Retry for read-only calls (GETs, unless `allowed_methods` says more): up to
    MAX_ATTEMPTS tries of a call that meets throttling (429), a server error (500, 502, 503, 504)
    or a read timeout, backing off 0, 2, 4 and 8 s between them, or as long as the answer's
    Retry-After says (urllib3/util/retry.py). A connection that fails (refused, an unknown name,
    no answer to the handshake) is tried once more, at once, and a proxy that refuses the tunnel
    not at all: neither heals within seconds, and the command says at once that the server
    could not be reached. Each retry is reported to `calls`; one whose wait would pass the
    deadline is not made. The last answer is returned, not raised (`raise_on_status=False`), so
    that the error the server gave, which says it was throttled, is what the command reports.
    Answers of a `throttled` status count as throttling in the report."""

    def __init__(
        self,
        calls: Calls,
        deadline: Deadline,
        throttled: Collection[int] = (THROTTLED_STATUS,),
        **kwargs: Any,
    ):
        defaults: dict[str, Any] = {
            "total": MAX_ATTEMPTS - 1,
            "connect": 1,
            "other": 0,
            "backoff_factor": 1,
            "status_forcelist": RETRIED_STATUSES,
            "allowed_methods": {"GET"},
            "respect_retry_after_header": True,
            "raise_on_status": False,
        }
        super().__init__(**(defaults | kwargs))
        self.calls = calls
        self.deadline = deadline
        self.throttled = tuple(throttled)

    def new(self, **kwargs: Any) -> "DeadlineRetry":
        # urllib3 makes each next Retry with `type(self)(**params)`.
        return super().new(
            calls=self.calls, deadline=self.deadline, throttled=self.throttled, **kwargs
        )

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> "DeadlineRetry":
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        after = retry.get_retry_after(response) if response is not None else None
        wait = after if self.respect_retry_after_header and after else retry.get_backoff_time()
        if wait >= self.deadline.remaining():
            raise MaxRetryError(_pool, url, error) from error
        if response is not None:
            self.calls.answered(throttled=response.status in self.throttled)
        self.calls.again()
        return retry


def reported_session(calls: Calls, retry: DeadlineRetry) -> requests.Session:
    """A session whose calls are reported to `calls` and retried by `retry`."""
    session = requests.Session()
    for scheme in ("https://", "http://"):
        session.mount(scheme, ReportedAdapter(calls, retry))
    return session

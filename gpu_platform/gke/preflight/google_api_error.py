"""A Google API's answer other than success, as `gpu-platform preflight` reports it."""

import json

RATE_LIMIT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
"""Compute Engine's reasons for a 403 to a used-up rate quota ("Compute Engine rate quotas"):
throttling, not a permission refused."""


class GoogleApiError(Exception):
    """A Google API's answer other than success, in the APIs' error shape
    (https://cloud.google.com/apis/design/errors: `{"error": {"code", "message", "status"}}`;
    Compute Engine gives `errors[].reason` instead of `status`)."""

    def __init__(self, permission: str, resource: str, status: int, body: bytes):
        try:
            error = json.loads(body).get("error", {})
        except (ValueError, AttributeError):
            error = {}
        reasons = [e.get("reason", "") for e in error.get("errors", [])]
        self.permission = permission
        self.resource = resource
        self.status = status
        self.reason = str(error.get("status") or next(iter(reasons), ""))
        self.message = str(error.get("message") or body[:200].decode(errors="replace"))
        super().__init__(f"{status} {self.reason}: {self.message}")

    @property
    def refused(self) -> bool:
        """Whether the caller lacks the permission (403), rather than a rate quota."""
        return self.status == 403 and self.reason not in RATE_LIMIT_REASONS

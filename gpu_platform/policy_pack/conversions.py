"""Each resource's properties are converted once per request, not once per policy.

pulumi-policy hands every policy the resource's properties as its own copy: protobuf Struct to
dict (`json_format.MessageToDict`), dict to values (`deserialize_properties`), values to
read-only proxies that raise on an unknown (`unknown_checking_proxy`). It converts them again
for each policy: in `Analyze` once per resource policy, and in `AnalyzeStack` every resource of
the stack once per stack policy (pulumi_policy/policy.py, `_PolicyAnalyzerServicer.Analyze` and
`AnalyzeStack`). With the pack's 17 resource and 13 stack policies that conversion was nearly
all of its time on a large stack, and grew with policies times resources.

`share_conversions` makes the three steps remember their result for the length of one Analyze
or AnalyzeStack request, keyed by the object they convert, so each resource is converted once
and every policy reads the same proxies. The policies are untouched: each is still declared to
the engine, configured with its own enforcement level and parameters, and run on its own. The
proxies are read-only views the policies never write to. `Remediate` is left alone: it
converts with secrets kept as secrets, and a remediation returns changed properties.
"""

import threading
from collections.abc import Callable
from functools import wraps
from types import SimpleNamespace
from typing import Any

from google.protobuf import json_format
from pulumi_policy import policy as policy_sdk

_request = threading.local()
"""The conversions of the request this thread serves: id of the input -> (input, result). The
input is kept, so that its id cannot be taken by another object before the request ends."""


def _once_per_request(convert: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(convert)
    def remembered(value: Any, *more: Any, **options: Any) -> Any:
        done: dict[tuple[int, int], tuple[Any, Any]] | None = getattr(_request, "done", None)
        if done is None or more or options:
            return convert(value, *more, **options)
        key = (id(convert), id(value))
        if key not in done:
            done[key] = (value, convert(value))
        return done[key][1]

    return remembered


def _per_request(serve: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(serve)
    def served(self: Any, request: Any, context: Any) -> Any:
        _request.done = {}
        try:
            return serve(self, request, context)
        finally:
            _request.done = None

    return served


def share_conversions() -> None:
    """Convert each resource's properties once per Analyze and AnalyzeStack request."""
    # The SDK uses only MessageToDict of json_format; anything else it asks for fails loudly.
    policy_sdk.json_format = SimpleNamespace(  # type: ignore[assignment]
        MessageToDict=_once_per_request(json_format.MessageToDict)
    )
    policy_sdk.deserialize_properties = _once_per_request(policy_sdk.deserialize_properties)
    policy_sdk.unknown_checking_proxy = _once_per_request(policy_sdk.unknown_checking_proxy)
    servicer = policy_sdk._PolicyAnalyzerServicer
    servicer.Analyze = _per_request(servicer.Analyze)  # type: ignore[method-assign]
    servicer.AnalyzeStack = _per_request(servicer.AnalyzeStack)  # type: ignore[method-assign]

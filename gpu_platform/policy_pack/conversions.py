"""Each resource's properties are converted once, not once per policy.

pulumi-policy hands every policy the resource's properties as its own copy: protobuf Struct to
dict (`json_format.MessageToDict`), dict to values (`deserialize_properties`), values to
read-only proxies that raise on an unknown (`unknown_checking_proxy`). It converts them again
for each policy: in `Analyze` once per resource policy, and in `AnalyzeStack` every resource of
the stack once per stack policy (pulumi_policy/policy.py, `_PolicyAnalyzerServicer.Analyze` and
`AnalyzeStack`), and reads each resource's options and provider again for each policy too. With
the pack's 17 resource and 13 stack policies that was nearly all of its time on a large stack,
and it grew with policies times resources.

`share_conversions` makes the conversions remember their results: a Struct's dict by its
content (so `AnalyzeStack` reuses what `Analyze` converted for the same resource), the values
and proxies made of that dict by the dict itself, and a resource's options and provider for
the length of one request. The policies are untouched: each is still declared to the engine,
configured with its own enforcement level and parameters, and run on its own; the proxies they
share are read-only views they never write to. `Remediate` is left alone: it converts with
secrets kept as secrets, and a remediation returns changed properties. One pack process serves
one preview or update, so what is remembered lasts as long as the stack it describes.
"""

import threading
from collections.abc import Callable
from functools import wraps
from types import SimpleNamespace
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from pulumi_policy import policy as policy_sdk

_request = threading.local()
"""What the request this thread serves has read: ids of the inputs -> (inputs, result). The
inputs are kept, so that their ids cannot be taken by other objects before the request ends."""


def _by_content(convert: Callable[[Message], Any]) -> Callable[[Message], Any]:
    done: dict[bytes, Any] = {}

    @wraps(convert)
    def remembered(message: Message) -> Any:
        key = message.SerializeToString(deterministic=True)
        if key not in done:
            done[key] = convert(message)
        return done[key]

    return remembered


def _by_identity(convert: Callable[[Any], Any]) -> Callable[..., Any]:
    # The inputs (the dicts `_by_content` made) are kept with the results: they live as long
    # as the process, so their ids stay theirs.
    done: dict[int, tuple[Any, Any]] = {}

    @wraps(convert)
    def remembered(value: Any, *more: Any) -> Any:
        if more:  # Remediate's conversion, which keeps secrets
            return convert(value, *more)
        if id(value) not in done:
            done[id(value)] = (value, convert(value))
        return done[id(value)][1]

    return remembered


def _once_per_request(read: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(read)
    def remembered(*args: Any) -> Any:
        done: dict[tuple[int, ...], tuple[Any, Any]] | None = getattr(_request, "done", None)
        if done is None:
            return read(*args)
        key = (id(read), *map(id, args))
        if key not in done:
            done[key] = (args, read(*args))
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
    """Convert each resource's properties once, and read its options and provider once per
    Analyze and AnalyzeStack request."""
    # The SDK uses only MessageToDict of json_format; anything else it asks for fails loudly.
    policy_sdk.json_format = SimpleNamespace(  # type: ignore[assignment]
        MessageToDict=_by_content(json_format.MessageToDict)
    )
    policy_sdk.deserialize_properties = _by_identity(policy_sdk.deserialize_properties)
    policy_sdk.unknown_checking_proxy = _by_identity(policy_sdk.unknown_checking_proxy)
    servicer = policy_sdk._PolicyAnalyzerServicer
    options = _once_per_request(servicer._get_resource_options)
    provider = _once_per_request(servicer._get_provider_resource)
    servicer._get_resource_options = options  # type: ignore[method-assign]
    servicer._get_provider_resource = provider  # type: ignore[method-assign]
    servicer.Analyze = _per_request(servicer.Analyze)  # type: ignore[method-assign]
    servicer.AnalyzeStack = _per_request(servicer.AnalyzeStack)  # type: ignore[method-assign]

"""Stand-in answers for the offline plan: what a cloud would answer to the program's lookups,
and the computed outputs a created resource would have.

Each cloud's module contributes `INVOKES` (invoke token -> answer from args) and `OUTPUTS`
(resource type -> outputs from name and inputs). Every stand-in answer is recorded and labelled
as such by the plan; none of it is presented as coming from an account.
"""

from collections.abc import Callable, Mapping
from typing import Any

from tools.stand_ins import aws, gcp

InvokeStandIn = Callable[[dict[str, Any]], dict[str, Any]]
OutputStandIn = Callable[[str, dict[str, Any]], dict[str, Any]]

_INVOKES: Mapping[str, InvokeStandIn] = {**aws.INVOKES, **gcp.INVOKES}
_OUTPUTS: Mapping[str, OutputStandIn] = {**aws.OUTPUTS, **gcp.OUTPUTS}


class NoStandIn(LookupError):
    """The program made a lookup the offline plan has no stand-in answer for."""


def invoke(token: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        stand_in = _INVOKES[token]
    except KeyError:
        raise NoStandIn(f"the offline plan has no stand-in answer for {token}") from None
    return stand_in(args)


def computed_outputs(type_: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    stand_in = _OUTPUTS.get(type_)
    return stand_in(name, inputs) if stand_in else {}

"""Stand-ins for the functions of the Pulumi engine itself (the `pulumi` package), which a
program calls to read its stack's state."""

from collections.abc import Callable
from typing import Any


def read_stack_resource_outputs(args: dict[str, Any]) -> dict[str, Any]:
    """The offline plan is of the stack's first update: its state holds no resource yet."""
    return {"name": args["stackName"], "outputs": {}}


INVOKES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "pulumi:pulumi:readStackResourceOutputs": read_stack_resource_outputs,
}
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {}

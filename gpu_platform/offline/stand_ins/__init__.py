"""Stand-in answers for the offline plan: what a cloud would answer to the program's lookups,
and the computed outputs a created resource would have.

Each cloud's module contributes `INVOKES` (invoke token -> answer from args) and `OUTPUTS`
(resource type -> outputs from name and inputs). Every stand-in answer is recorded and labelled
as such by the plan; none of it is presented as coming from an account.

A cloud's module is imported on the first token of its provider: the GKE stand-ins import the
GKE components (and so pulumi_gcp), which an EKS plan has no use for.
"""

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

InvokeStandIn = Callable[[dict[str, Any]], dict[str, Any]]
OutputStandIn = Callable[[str, dict[str, Any]], dict[str, Any]]

# Token prefix (the provider's package) -> the module with its stand-ins.
_MODULES: Mapping[str, str] = {
    "aws": "gpu_platform.offline.stand_ins.aws",
    "gcp": "gpu_platform.offline.stand_ins.gcp",
    "pulumi": "gpu_platform.offline.stand_ins.engine",
}


class NoStandIn(LookupError):
    """The program made a lookup the offline plan has no stand-in answer for."""


class LookupFailed(Exception):
    """A stand-in lookup fails as the provider's would (a cluster not created yet), with the
    provider's message."""


CLUSTER_TYPES = ("aws:eks/cluster:Cluster", "gcp:container/cluster:Cluster")
"""The clusters a program may create itself, beside the platform."""
CREATED_CLUSTERS: set[str] = set()
"""The names of the clusters the program being planned creates (`created`): the cluster
lookups do not find them, as the cloud's do not on the first `pulumi preview`, before they
exist."""


def created(type_: str, name: str, props: Mapping[str, Any]) -> None:
    """Note a resource the program constructs, before it asks anything of the cloud: a cluster
    by the name it gives it, or by its resource name, which an auto-name begins with."""
    if type_ in CLUSTER_TYPES:
        given = props.get("name")
        CREATED_CLUSTERS.add(given if isinstance(given, str) else name)


def invoke(token: str, args: dict[str, Any]) -> dict[str, Any]:
    stand_in = _stand_ins(token, "INVOKES").get(token)
    if stand_in is None:
        raise NoStandIn(f"the offline plan has no stand-in answer for {token}")
    return stand_in(args)


def computed_outputs(type_: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    stand_in = _stand_ins(type_, "OUTPUTS").get(type_)
    return stand_in(name, inputs) if stand_in else {}


def _stand_ins(token: str, table: str) -> Mapping[str, Any]:
    module = _MODULES.get(token.split(":", 1)[0])
    return getattr(import_module(module), table) if module else {}

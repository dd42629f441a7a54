"""Who created the cluster, kept in the stack's own state: the control plane component's output
`creator`, read back at the next `pulumi up` through the engine's
`pulumi:pulumi:readStackResourceOutputs` (pulumi pkg/resource/deploy/builtins.go: the outputs
of every resource in the stack's last snapshot, `pkg/backend/backend.go`
`GetStackResourceOutputs`; the `pulumi` package's functions go to the engine's built-in
provider, pkg/resource/deploy/providers/registry.go).

Only an update of the stack writes its state (or whoever may write its state backend, who can
change everything else the stack deploys as well), and whoever can run one is a cluster
administrator already. A cloud tag would not do: anyone with `eks:TagResource` could name
themselves the creator, and the next `pulumi up` would make them cluster-admin and drop the real
creator's access entry.
"""

from collections.abc import Mapping
from typing import Any

import pulumi

CONTROL_PLANE_TYPE = "gpu-platform:eks:ControlPlane"
CREATOR_OUTPUT = "creator"
READ_STACK_RESOURCE_OUTPUTS = "pulumi:pulumi:readStackResourceOutputs"


def stack_name() -> str:
    """The stack as the engine's backends name it, `<organization>/<project>/<stack>` (the
    self-managed backends' organization is `organization`)."""
    return f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"


def recorded_creator() -> str | None:
    """The creator the stack's last update recorded, None where it recorded none."""
    state = pulumi.runtime.invoke(READ_STACK_RESOURCE_OUTPUTS, {"stackName": stack_name()})
    return creator_in(state.value or {})


def creator_in(state: Mapping[str, Any]) -> str | None:
    """`state`: the answer of `readStackResourceOutputs`, `{"outputs": {urn: {"type",
    "outputs"}}}`."""
    for resource in (state.get("outputs") or {}).values():
        if resource.get("type") == CONTROL_PLANE_TYPE:
            creator = (resource.get("outputs") or {}).get(CREATOR_OUTPUT)
            if isinstance(creator, str) and creator:
                return creator
    return None

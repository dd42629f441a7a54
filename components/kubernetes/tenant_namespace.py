"""A namespace where a team runs GPU workloads under Pod Security `restricted`."""

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.config import TenantNamespaceSpec
from components.node_identity import ResolvedPool


@dataclass
class GpuTenantNamespaceArgs:
    namespace: TenantNamespaceSpec
    pools: Sequence[ResolvedPool]


class GpuTenantNamespace(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        args: GpuTenantNamespaceArgs,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:kubernetes:GpuTenantNamespace", name, None, opts)
        self.register_outputs({})

"""The NVIDIA GPU Operator, installed from its pinned chart in a namespace of its own."""

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.config import MonitoringSpec, OperatorSpec, Platform
from components.node_identity import ResolvedPool


@dataclass
class GpuOperatorArgs:
    operator: OperatorSpec
    platform: Platform
    pools: Sequence[ResolvedPool]
    monitoring: MonitoringSpec


class GpuOperator(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:kubernetes:GpuOperator", name, None, opts)
        self.namespace = pulumi.Output.from_input(args.operator.namespace)
        self.chart_version = pulumi.Output.from_input(args.operator.chart_version)
        self.register_outputs(
            {"namespace": self.namespace, "chart_version": self.chart_version}
        )

"""GPU alerts and dashboards on the Prometheus Operator, and optionally the Prometheus stack."""

from dataclasses import dataclass

import pulumi

from components.config import MonitoringSpec, Platform


@dataclass
class GpuMonitoringArgs:
    monitoring: MonitoringSpec
    platform: Platform


class GpuMonitoring(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: GpuMonitoringArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("gpu-platform:kubernetes:GpuMonitoring", name, None, opts)
        self.prometheus_operator: list[pulumi.Resource] = []
        """What must exist before anything uses the Prometheus Operator's CRDs."""
        self.rule_names = pulumi.Output.from_input([])
        self.register_outputs({"rule_names": self.rule_names})

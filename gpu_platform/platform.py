"""`GpuPlatform`: the whole platform as one component, the one most projects need.

It composes the per-part components in the order the platform needs them: the cloud's GPU
pools (looked up and validated before anything is created), a Kubernetes provider for the
cluster, the monitoring (whose Prometheus Operator the GPU Operator's ServiceMonitor needs), the
GPU Operator once the pools exist, and the tenant namespaces once the operator is in. Every
decision lives in those components and every default in the config model; this module only
wires them.

```python
import pulumi
from gpu_platform.platform import GpuPlatform, GpuPlatformArgs

platform = GpuPlatform("gpu-platform", GpuPlatformArgs.from_config())
for name, value in platform.stack_outputs.items():
    pulumi.export(name, value)
```
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from gpu_platform.cloud import cloud_for
from gpu_platform.config import (
    StackConfig,
    load_stack_config,
    read_pulumi_config,
    secret_config_keys,
)
from gpu_platform.kubernetes.gpu_operator import GpuOperator, GpuOperatorArgs
from gpu_platform.kubernetes.gpu_pod import pool_placement
from gpu_platform.kubernetes.helm_release import most_nodes
from gpu_platform.kubernetes.monitoring import GpuMonitoring, GpuMonitoringArgs
from gpu_platform.kubernetes.tenant_namespace import GpuTenantNamespace, GpuTenantNamespaceArgs
from gpu_platform.node_identity import pool_software
from gpu_platform.secrets import secret_if


@dataclass(frozen=True)
class GpuPlatformArgs:
    """The platform's settings: the validated config model, however it was given.

    Build it with `from_config()` from the stack's `gpu-platform:` config keys, or with
    `from_settings()` from a mapping of the same keys in code. Both validate with the same rules
    and raise the same `ConfigError` (the key, the value unless secret, what is allowed) before
    any resource is registered.
    """

    config: StackConfig
    """The stack's settings, every default filled in (`gpu_platform.config`)."""

    @classmethod
    def from_config(cls) -> "GpuPlatformArgs":
        """The stack's `gpu-platform:` config keys (`Pulumi.<stack>.yaml`), with the keys set as
        secrets kept secret in every resource and output they reach."""
        return cls(load_stack_config(read_pulumi_config(), secret_config_keys()))

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, Any], secret_keys: frozenset[str] = frozenset()
    ) -> "GpuPlatformArgs":
        """Settings given in code, keyed as in a stack file without the namespace (`cloud`,
        `cluster`, `pools`, ...); `secret_keys` names those whose values are to stay secret."""
        return cls(load_stack_config(settings, secret_keys))


class GpuPlatform(pulumi.ComponentResource):
    """GPU node pools, the NVIDIA GPU Operator, GPU monitoring and tenant namespaces on an existing
    EKS or GKE cluster.

    Outputs: `kubeconfig` (secret; None where the config names a kubeconfig context),
    `gpu_operator_version`, `gpu_operator_namespace`, `prometheus_rule_names`, `pools` (how a pod
    lands on each pool), `gpu_pools` (each pool's driver and CUDA ceiling), and `stack_outputs`,
    all of them under the names this project's stacks export.
    """

    kubeconfig: pulumi.Output[str] | None
    gpu_operator_version: pulumi.Output[str | None]
    gpu_operator_namespace: pulumi.Output[str]
    prometheus_rule_names: pulumi.Output[list[str]]
    pools: pulumi.Output[dict[str, Any]]
    gpu_pools: pulumi.Output[dict[str, Any]]
    stack_outputs: dict[str, Any]
    """Every output by its stack output name (`gpuOperatorVersion`, `pools`, ...), to export."""

    def __init__(
        self, name: str, args: GpuPlatformArgs, opts: pulumi.ResourceOptions | None = None
    ):
        config = args.config
        cloud = cloud_for(config)
        # Lookups only: a pool that cannot work is a config error before anything, this
        # component included, is registered.
        pools = cloud.resolve_pools()
        super().__init__("gpu-platform:index:GpuPlatform", name, None, opts)
        # Before this component existed, its children were the stack's own: the alias keeps
        # their URNs, so that a stack created then is updated in place, not replaced.
        children = pulumi.ResourceOptions(
            parent=self, aliases=[pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)]
        )
        connection = cloud.connect(children)
        node_pools = cloud.create_pools(pools, connection, children)
        on_cluster = pulumi.ResourceOptions.merge(
            children, pulumi.ResourceOptions(provider=connection.provider)
        )

        monitoring = GpuMonitoring(
            "gpu-monitoring",
            GpuMonitoringArgs(
                config.monitoring,
                config.platform,
                config.operator.namespace,
                gpu_nodes=most_nodes(config.pools),
                secret_labels=config.is_secret("monitoring"),
                protect=config.protect,
            ),
            on_cluster,
        )
        operator = GpuOperator(
            "gpu-operator",
            GpuOperatorArgs(
                config.operator,
                config.platform,
                pools,
                config.monitoring,
                secret_values=config.is_secret("operator", "pools", "monitoring"),
                protect=config.protect,
            ),
            pulumi.ResourceOptions.merge(
                on_cluster,
                pulumi.ResourceOptions(depends_on=[*node_pools, *monitoring.prometheus_operator]),
            ),
        )
        for namespace in config.namespaces:
            GpuTenantNamespace(
                namespace.name,
                GpuTenantNamespaceArgs(
                    namespace,
                    pools,
                    config.monitoring,
                    secret_monitoring=config.is_secret("monitoring"),
                    provisioner=config.provisioner,
                ),
                pulumi.ResourceOptions.merge(
                    on_cluster, pulumi.ResourceOptions(depends_on=[operator])
                ),
            )

        secret_pools = config.is_secret("pools")
        self.kubeconfig = (
            None if connection.kubeconfig is None else pulumi.Output.secret(connection.kubeconfig)
        )
        self.gpu_operator_version = operator.chart_version
        self.gpu_operator_namespace = operator.namespace
        self.prometheus_rule_names = monitoring.rule_names
        self.pools = pulumi.Output.from_input(
            secret_if(
                secret_pools,
                {pool.spec.name: pool_placement(pool, config.provisioner) for pool in pools},
            )
        )
        self.gpu_pools = pulumi.Output.from_input(
            secret_if(secret_pools, {pool.spec.name: pool_software(pool) for pool in pools})
        )
        self.stack_outputs = {
            **({} if self.kubeconfig is None else {"kubeconfig": self.kubeconfig}),
            "gpuOperatorVersion": self.gpu_operator_version,
            "gpuOperatorNamespace": self.gpu_operator_namespace,
            "helmReleaseNamespaces": config.helm_release_namespaces,
            "prometheusRuleNames": self.prometheus_rule_names,
            "pools": self.pools,
            "gpuPools": self.gpu_pools,
            **cloud.stack_outputs(),
        }
        self.register_outputs(self.stack_outputs)

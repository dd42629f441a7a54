"""GPU platform: GPU node pools, the NVIDIA GPU Operator, monitoring and tenant namespaces.

Composition only: every decision lives in `gpu_platform/`, every default in the config model.
"""

import pulumi

from gpu_platform.cloud import cloud_for
from gpu_platform.config import load_stack_config, read_pulumi_config, secret_config_keys
from gpu_platform.kubernetes.gpu_operator import GpuOperator, GpuOperatorArgs
from gpu_platform.kubernetes.gpu_pod import pool_placement
from gpu_platform.kubernetes.idle_gpu_pods import idle_gpu_reaper
from gpu_platform.kubernetes.monitoring import GpuMonitoring, GpuMonitoringArgs
from gpu_platform.kubernetes.tenant_namespace import GpuTenantNamespace, GpuTenantNamespaceArgs
from gpu_platform.node_identity import pool_software
from gpu_platform.secrets import secret_if

config = load_stack_config(read_pulumi_config(), secret_config_keys())
cloud = cloud_for(config)
pools = cloud.resolve_pools()

connection = cloud.connect()
node_pools = cloud.create_pools(pools, connection)
on_cluster = pulumi.ResourceOptions(provider=connection.provider)

monitoring = GpuMonitoring(
    "gpu-monitoring",
    GpuMonitoringArgs(
        config.monitoring,
        config.platform,
        config.operator.namespace,
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
tenants = [
    GpuTenantNamespace(
        namespace.name,
        GpuTenantNamespaceArgs(
            namespace,
            pools,
            provisioner=config.provisioner,
        ),
        pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=[operator])),
    )
    for namespace in config.namespaces
]
idle_gpu_reaper(
    [
        (spec, tenant.namespace_name)
        for spec, tenant in zip(config.namespaces, tenants, strict=True)
    ],
    config.monitoring,
    secret_url=config.is_secret("monitoring"),
    opts=on_cluster,
)

if connection.kubeconfig is not None:
    pulumi.export("kubeconfig", pulumi.Output.secret(connection.kubeconfig))
pulumi.export("gpuOperatorVersion", operator.chart_version)
pulumi.export("gpuOperatorNamespace", operator.namespace)
pulumi.export("helmReleaseNamespaces", config.helm_release_namespaces)
pulumi.export("prometheusRuleNames", monitoring.rule_names)
pulumi.export(
    "pools",
    secret_if(
        config.is_secret("pools"),
        {pool.spec.name: pool_placement(pool, config.provisioner) for pool in pools},
    ),
)
pulumi.export(
    "gpuPools",
    secret_if(config.is_secret("pools"), {pool.spec.name: pool_software(pool) for pool in pools}),
)
for name, value in cloud.stack_outputs().items():
    pulumi.export(name, value)

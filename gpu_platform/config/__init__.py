"""The stack's configuration: one validated model, the only place defaults live.

`Pulumi.<stack>.yaml` holds keys in the `gpu-platform:` namespace (`gpu-platform:pools`,
`gpu-platform:operator`, ...). `load_stack_config` validates all of them at once and raises one
`ConfigError` that lists every problem by its key path (`gpu-platform:pools[1].max`), the value
it found and what is allowed, before the program registers a single resource.

Field names are snake_case here and camelCase in the stack file (`gpusPerNode`), like every
other Pulumi configuration.

The model is split by concern, each concern's types beside the rules across their fields:
- `fields`: the base model, clouds and platforms, constrained strings and what they mean;
- `pools` (GPU pools and sharing), `cloud_options` (the cluster, EKS and GKE pool settings),
  `cluster_create` (a cluster the platform creates, `cluster.create`),
  `capacity` (autoscaler, Karpenter, reservations), `operator` (GPU Operator, monitoring),
  `tenants` (tenant namespaces), and `stack`, the whole stack's model;
- `problems` (the error report), `key_paths` (how keys are named, in the stack file and in
  code), `loading` (reading and validating the stack's keys), `set_aside` (the config with its
  invalid keys left out, for the rules across fields to run over the valid ones);
- `rules` runs the rules across fields: `pool_rules`, `eks_rules`, `gke_rules`,
  `canary_rules`, `operator_rules`, `tenant_rules`, `cluster_create_rules`.
"""

from gpu_platform.config.capacity import (
    CANARY_PREFERENCE,
    CAPACITY_PREFERENCE,
    DRIFT_BUDGET_PERCENT,
    EC2_RESERVED_CAPACITIES,
    GKE_CAPACITY_MINIMUM_VERSIONS,
    PLATFORM_NAMESPACE,
    ClusterAutoscalerSpec,
    KarpenterSpec,
    dynamic_workload_scheduler_modes,
    gke_capacity_too_new,
    pool_preference,
)
from gpu_platform.config.cloud_options import ClusterSpec, EksPoolOptions, GkePoolOptions
from gpu_platform.config.cluster_create import (
    ClusterCreate,
    EksClusterCreate,
    EksNewVpc,
    EksSystemNodes,
    EndpointAccess,
    GkeAuthorizedNetwork,
    GkeClusterCreate,
    GkeExistingNetwork,
    GkeMaintenanceExclusion,
    GkeMaintenanceWindow,
    GkeNewNetwork,
    GkeSystemNodePool,
)
from gpu_platform.config.drift_window import DriftWindow
from gpu_platform.config.fields import Cloud, Platform, Provisioner
from gpu_platform.config.gke_rules import NVIDIA_DRIVER_MIN_CHART_VERSION, NVIDIA_DRIVER_OVERRIDES
from gpu_platform.config.loading import (
    check_stack_config,
    load_stack_config,
    read_pulumi_config,
    secret_config_keys,
)
from gpu_platform.config.operator import MonitoringSpec, OperatorSpec, pool_driver_version
from gpu_platform.config.pool_rules import mig_problem
from gpu_platform.config.pools import (
    DRA_TAINT_KEY,
    GPU_TAINT_KEY,
    SHARING_MODES,
    ExclusiveSharing,
    GpuPoolSpec,
    MigSharing,
    MpsSharing,
    PoolValidation,
    Sharing,
    TaintSpec,
    TimeSlicingSharing,
    gke_shares,
)
from gpu_platform.config.problems import CONFIG_NAMESPACE, ConfigError, ConfigProblem, key_path
from gpu_platform.config.queues import QueuesSpec, TenantQueueSpec
from gpu_platform.config.stack import StackConfig
from gpu_platform.config.tenants import QuotaSetting, TenantNamespaceSpec, quota_setting

__all__ = [
    "CANARY_PREFERENCE",
    "CAPACITY_PREFERENCE",
    "CONFIG_NAMESPACE",
    "DRA_TAINT_KEY",
    "DRIFT_BUDGET_PERCENT",
    "EC2_RESERVED_CAPACITIES",
    "GKE_CAPACITY_MINIMUM_VERSIONS",
    "GPU_TAINT_KEY",
    "NVIDIA_DRIVER_MIN_CHART_VERSION",
    "NVIDIA_DRIVER_OVERRIDES",
    "PLATFORM_NAMESPACE",
    "SHARING_MODES",
    "Cloud",
    "ClusterAutoscalerSpec",
    "ClusterCreate",
    "ClusterSpec",
    "ConfigError",
    "ConfigProblem",
    "DriftWindow",
    "EksClusterCreate",
    "EksNewVpc",
    "EksPoolOptions",
    "EksSystemNodes",
    "EndpointAccess",
    "ExclusiveSharing",
    "GkeAuthorizedNetwork",
    "GkeClusterCreate",
    "GkeExistingNetwork",
    "GkeMaintenanceExclusion",
    "GkeMaintenanceWindow",
    "GkeNewNetwork",
    "GkePoolOptions",
    "GkeSystemNodePool",
    "GpuPoolSpec",
    "KarpenterSpec",
    "MigSharing",
    "MonitoringSpec",
    "MpsSharing",
    "OperatorSpec",
    "Platform",
    "PoolValidation",
    "Provisioner",
    "QueuesSpec",
    "QuotaSetting",
    "Sharing",
    "StackConfig",
    "TaintSpec",
    "TenantNamespaceSpec",
    "TenantQueueSpec",
    "TimeSlicingSharing",
    "check_stack_config",
    "dynamic_workload_scheduler_modes",
    "gke_capacity_too_new",
    "gke_shares",
    "key_path",
    "load_stack_config",
    "mig_problem",
    "pool_driver_version",
    "pool_preference",
    "quota_setting",
    "read_pulumi_config",
    "secret_config_keys",
]

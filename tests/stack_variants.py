"""Stack configs, built on the dev stack's, that tests of several components share."""

import copy
from typing import Any

Config = dict[str, Any]

AL2023_RELEASE = "1.35.6-20260714"
"""An EKS AL2023 NVIDIA AMI release for Kubernetes 1.35, the stand-in cluster's version, whose
driver the platform knows (580.159.03): every EKS pool must pin one."""
BOTTLEROCKET_RELEASE = "1.54.0-0d4a7f31"
"""A Bottlerocket release whose NVIDIA variant's driver the platform knows (580.126.09)."""

MIG_POOL = "a100-mig"
MIG_SLICE_RESOURCE = "nvidia.com/mig-1g.10gb"


def with_mig_mixed_pool(config: Config) -> Config:
    """`config` plus an A100 80GB pool partitioned into 1g.10gb MIG slices, advertised under their
    own resource name (`mixed`), which the tenant namespace's smoke test runs on."""
    config = copy.deepcopy(config)
    config["gpu-platform:pools"].append(
        {
            "name": MIG_POOL,
            "instanceTypes": ["p4de.24xlarge"],
            "accelerator": "a100-80gb",
            "gpusPerNode": 8,
            "max": 2,
            "sharing": {"mode": "mig", "strategy": "mixed", "profile": "all-1g.10gb"},
            "aws": {"amiReleaseVersion": AL2023_RELEASE},
        }
    )
    config["gpu-platform:namespaces"][0]["smokeTestPool"] = MIG_POOL
    return config


def reachable_gke(gke_config: Config) -> Config:
    """The GKE fixture's config, reaching its cluster through a kubeconfig context."""
    config = copy.deepcopy(gke_config)
    config["gpu-platform:cluster"]["kubeconfigContext"] = "ml-dev"
    return config

"""Reading the created cluster's resources out of a plan, and changing `cluster.create`."""

from typing import Any

from gpu_platform.offline.program import Plan, PlannedResource

Config = dict[str, Any]
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
NETWORK = "gcp:compute/network:Network"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
ROUTER = "gcp:compute/router:Router"
ROUTER_NAT = "gcp:compute/routerNat:RouterNat"
SERVICE_ACCOUNT = "gcp:serviceaccount/account:Account"
IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
KEY_RING = "gcp:kms/keyRing:KeyRing"
CRYPTO_KEY = "gcp:kms/cryptoKey:CryptoKey"
KEY_MEMBER = "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember"
SYSTEM_POOL = "cluster-system"


def cluster(plan: Plan) -> PlannedResource:
    (found,) = plan.of_type(CLUSTER)
    return found


def system_pool(plan: Plan) -> PlannedResource:
    return plan.named(SYSTEM_POOL, NODE_POOL)


def with_create(config: Config, **changes: Any) -> Config:
    """The config with `cluster.create` changed (keys as in the stack file)."""
    config["gpu-platform:cluster"]["create"].update(changes)
    return config


def with_gcp(config: Config, **changes: Any) -> Config:
    """The config with `cluster.create.gcp` changed."""
    create = config["gpu-platform:cluster"]["create"]
    create["gcp"] = {**create.get("gcp", {}), **changes}
    return config


def with_managed_prometheus(config: Config) -> Config:
    """The config with `monitoring.googleManagedPrometheus` on."""
    config["gpu-platform:monitoring"] = {
        **config.get("gpu-platform:monitoring", {}),
        "googleManagedPrometheus": True,
    }
    return config

"""Config validation of `cluster.create`: the defaults a created cluster gets, and every bad
value refused by its key, the value found and what is allowed, before anything is created."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.config import ConfigError, load_stack_config

Config = dict[str, Any]

EKS_NEW: Config = {
    "cloud": "aws",
    "cluster": {
        "name": "ml",
        "region": "us-east-1",
        "create": {
            "kubernetesVersion": "1.35",
            "administrators": ["arn:aws:iam::123456789012:role/platform-admins"],
            # A VPN's range: the default private endpoint admits nothing but the nodes without it.
            "aws": {"privateEndpointCidrs": ["10.8.0.0/16"]},
        },
    },
    "pools": [
        {
            "name": "l4",
            "instanceTypes": ["g6.xlarge"],
            "max": 2,
            "aws": {"amiReleaseVersion": "1.35.6-20260714"},
        }
    ],
    "monitoring": {"installPrometheusStack": True},
}
GKE_NEW: Config = {
    "cloud": "gcp",
    "cluster": {
        "name": "ml",
        "project": "p",
        "location": "us-central1",
        "create": {"kubernetesVersion": "1.35", "administrators": ["gke-admins@example.com"]},
    },
    "pools": [{"name": "l4", "instanceTypes": ["g2-standard-8"], "max": 2}],
    "monitoring": {"installPrometheusStack": True},
}


def changed(base: Config, change: Callable[[Config], None]) -> Config:
    config = copy.deepcopy(base)
    change(config)
    return config


def create_of(config: Config) -> Config:
    create: Config = config["cluster"]["create"]
    return create


def problems(raw: Config) -> dict[str, str]:
    with pytest.raises(ConfigError) as error:
        load_stack_config(raw)
    return {p.path: p.expected for p in error.value.problems}


def test_a_created_eks_cluster_is_private_with_every_audit_log_by_default() -> None:
    create = load_stack_config(EKS_NEW).cluster.create
    assert create is not None
    assert create.endpoint.access == "private"
    assert create.endpoint.public_cidrs == []
    assert {"audit", "authenticator"} <= set(create.aws.control_plane_logs)
    assert create.aws.vpc is None and create.aws.subnet_ids == []  # a new VPC, defaults
    assert create.aws.system_nodes.min == 2
    # EKS's own default is EXTENDED (botocore UpgradePolicyRequest `supportType`).
    assert create.aws.support_type == "STANDARD"


def test_an_unquoted_kubernetes_version_is_read_as_the_version_it_spells() -> None:
    config = changed(EKS_NEW, lambda c: create_of(c).update(kubernetesVersion=1.35))
    create = load_stack_config(config).cluster.create
    assert create is not None and create.kubernetes_version == "1.35"


def test_a_stack_without_create_attaches_as_before() -> None:
    config = changed(EKS_NEW, lambda c: c["cluster"].pop("create"))
    assert load_stack_config(config).cluster.create is None


def _set(path: list[str], value: Any) -> Callable[[Config], None]:
    def change(config: Config) -> None:
        target = create_of(config)
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return change


def _without_prometheus_stack(config: Config) -> None:
    config["monitoring"] = {"installPrometheusStack": False, "googleManagedPrometheus": True}


# (what is wrong, base, change, the key path the error names, words of what is allowed)
BAD: list[tuple[str, Config, Callable[[Config], None], str, str]] = [
    (
        "unsupported Kubernetes version",
        EKS_NEW,
        _set(["kubernetesVersion"], "1.32"),
        "cluster.create.kubernetesVersion",
        "1.33, 1.34, 1.35, 1.36",
    ),
    (
        "public endpoint without CIDRs",
        EKS_NEW,
        _set(["endpoint"], {"access": "public"}),
        "cluster.create.endpoint.publicCidrs",
        "the CIDR blocks the public endpoint answers",
    ),
    (
        "public endpoint open to the internet",
        EKS_NEW,
        _set(["endpoint"], {"access": "public", "publicCidrs": ["0.0.0.0/0"]}),
        "cluster.create.endpoint.publicCidrs[0]",
        "narrower than the whole internet",
    ),
    (
        "the whole internet in two halves",
        EKS_NEW,
        _set(["endpoint"], {"access": "public", "publicCidrs": ["0.0.0.0/1", "128.0.0.0/1"]}),
        "cluster.create.endpoint.publicCidrs[1]",
        "narrower than the whole internet",
    ),
    (
        "an authorized network that is half the internet",
        GKE_NEW,
        _set(["gcp", "authorizedNetworks"], [{"cidr": "10.0.0.0/8"}, {"cidr": "0.0.0.0/1"}]),
        "cluster.create.gcp.authorizedNetworks[1].cidr",
        "narrower than the whole internet",
    ),
    (
        "a system node release of another Kubernetes version",
        EKS_NEW,
        _set(["aws", "systemNodes"], {"amiReleaseVersion": "1.34.9-20260714"}),
        "cluster.create.aws.systemNodes.amiReleaseVersion",
        "an AL2023 release for Kubernetes",
    ),
    (
        "a GPU type for the system nodes",
        EKS_NEW,
        _set(["aws", "systemNodes"], {"instanceTypes": ["m7i.xlarge", "g5.xlarge"]}),
        "cluster.create.aws.systemNodes.instanceTypes[1]",
        "On-Demand Standard families",
    ),
    (
        "CIDRs on a private endpoint",
        GKE_NEW,
        _set(["endpoint"], {"publicCidrs": ["203.0.113.0/24"]}),
        "cluster.create.endpoint.publicCidrs",
        "no value with access private",
    ),
    (
        "CIDR with host bits",
        EKS_NEW,
        _set(["endpoint"], {"access": "public", "publicCidrs": ["203.0.113.7/24"]}),
        "cluster.create.endpoint.publicCidrs[0]",
        "no host bits set",
    ),
    (
        "a Google group as an EKS administrator",
        EKS_NEW,
        _set(["administrators"], ["admins@example.com"]),
        "cluster.create.administrators[0]",
        "an IAM role or user ARN",
    ),
    (
        "an IAM role as a GKE administrator",
        GKE_NEW,
        _set(["administrators"], ["arn:aws:iam::123456789012:role/admins"]),
        "cluster.create.administrators[0]",
        "a Google group e-mail",
    ),
    (
        "GKE settings on an EKS cluster",
        EKS_NEW,
        _set(["gcp"], {"releaseChannel": "rapid"}),
        "cluster.create.gcp",
        "no value when cloud is aws",
    ),
    (
        "a new VPC and existing subnets",
        EKS_NEW,
        _set(["aws"], {"vpc": {}, "subnetIds": ["subnet-0123456789abcdef0", "subnet-01234567"]}),
        "cluster.create.aws.subnetIds",
        "a new VPC or into existing subnets",
    ),
    (
        "one existing subnet",
        EKS_NEW,
        _set(["aws", "subnetIds"], ["subnet-0123456789abcdef0"]),
        "cluster.create.aws.subnetIds",
        "at least two subnets",
    ),
    (
        "a VPC wider than EC2 allows",
        EKS_NEW,
        _set(["aws", "vpc"], {"cidr": "10.0.0.0/12"}),
        "cluster.create.aws.vpc.cidr",
        "/16 to /20",
    ),
    (
        "two zones",
        EKS_NEW,
        _set(["aws", "vpc"], {"zones": ["us-east-1a", "us-east-1b"]}),
        "cluster.create.aws.vpc.zones",
        "exactly 3 different zones",
    ),
    (
        "a zone of another region",
        EKS_NEW,
        _set(["aws", "vpc"], {"zones": ["us-east-1a", "us-east-1b", "us-west-2c"]}),
        "cluster.create.aws.vpc.zones[2]",
        "a zone of the cluster's region us-east-1",
    ),
    (
        "no audit log",
        EKS_NEW,
        _set(["aws", "controlPlaneLogs"], ["api", "authenticator"]),
        "cluster.create.aws.controlPlaneLogs",
        "includes audit",
    ),
    (
        "a support policy EKS does not have",
        EKS_NEW,
        _set(["aws", "supportType"], "FREE"),
        "cluster.create.aws.supportType",
        "'STANDARD' or 'EXTENDED'",
    ),
    (
        "system nodes max below min",
        EKS_NEW,
        _set(["aws", "systemNodes"], {"min": 3, "max": 2}),
        "cluster.create.aws.systemNodes.max",
        "at least systemNodes.min (3)",
    ),
    (
        "an AMI release of another Kubernetes version",
        EKS_NEW,
        _set(["kubernetesVersion"], "1.34"),
        "pools[0].aws.amiReleaseVersion",
        "an AL2023 release for Kubernetes 1.34",
    ),
    (
        "a kubeconfig context",
        changed(EKS_NEW, lambda c: c["cluster"].update(kubeconfigContext="ml")),
        lambda c: None,
        "cluster.kubeconfigContext",
        "no value with cluster.create",
    ),
    (
        "node subnets beside a new VPC",
        changed(EKS_NEW, lambda c: c["cluster"].update(nodeSubnetIds=["subnet-01234567"])),
        lambda c: None,
        "cluster.nodeSubnetIds",
        "no value with a new VPC",
    ),
    (
        "a pool outside the new VPC's zones",
        changed(EKS_NEW, lambda c: c["pools"][0].update(zones=["us-east-1d"])),
        _set(["aws", "vpc"], {"zones": ["us-east-1a", "us-east-1b", "us-east-1c"]}),
        "pools[0].zones",
        "zones of the new VPC",
    ),
    (
        "a pool named as the system node group",
        changed(EKS_NEW, lambda c: c["pools"][0].update(name="system")),
        lambda c: None,
        "pools[0].name",
        "a name other than system",
    ),
    (
        "overlapping secondary ranges",
        GKE_NEW,
        _set(["gcp", "network"], {"podsCidr": "10.0.0.0/14"}),
        "cluster.create.gcp.network.podsCidr",
        "does not overlap network.subnetCidr",
    ),
    (
        "a new and an existing network",
        GKE_NEW,
        _set(
            ["gcp"],
            {
                "network": {},
                "existingNetwork": {
                    "network": "n",
                    "subnetwork": "s",
                    "podsRangeName": "pods",
                    "servicesRangeName": "services",
                },
            },
        ),
        "cluster.create.gcp.existingNetwork",
        "a new network or an existing one",
    ),
    (
        "a pinned version on a release channel",
        GKE_NEW,
        _set(["gcp", "version"], "1.35.1-gke.1000"),
        "cluster.create.gcp.version",
        "no value with releaseChannel stable",
    ),
    (
        "a pinned version of another minor",
        GKE_NEW,
        _set(["gcp"], {"releaseChannel": "none", "version": "1.34.1-gke.1000"}),
        "cluster.create.gcp.version",
        "a GKE version of Kubernetes 1.35",
    ),
    (
        "a maintenance window too short",
        GKE_NEW,
        _set(["gcp", "maintenanceWindow"], {"days": ["SA"]}),
        "cluster.create.gcp.maintenanceWindow.days",
        "at least 48 hours in any 32 days",
    ),
    (
        "a no-upgrades exclusion over 30 days",
        GKE_NEW,
        _set(
            ["gcp", "maintenanceExclusions"],
            [
                {
                    "name": "year-end",
                    "start": "2026-12-01T00:00:00Z",
                    "end": "2027-01-15T00:00:00Z",
                    "scope": "no-upgrades",
                }
            ],
        ),
        "cluster.create.gcp.maintenanceExclusions[0].end",
        "at most 30 days after its start",
    ),
    (
        "an exclusion ending before it starts",
        GKE_NEW,
        _set(
            ["gcp", "maintenanceExclusions"],
            [{"name": "x", "start": "2026-12-02T00:00:00Z", "end": "2026-12-01T00:00:00Z"}],
        ),
        "cluster.create.gcp.maintenanceExclusions[0].end",
        "a time after its start",
    ),
    (
        "an exclusion with neither end nor untilEndOfSupport",
        GKE_NEW,
        _set(["gcp", "maintenanceExclusions"], [{"name": "x", "start": "2026-12-01T00:00:00Z"}]),
        "cluster.create.gcp.maintenanceExclusions[0].end",
        "or untilEndOfSupport: true",
    ),
    (
        "an exclusion with both end and untilEndOfSupport",
        GKE_NEW,
        _set(
            ["gcp", "maintenanceExclusions"],
            [
                {
                    "name": "x",
                    "start": "2026-12-01T00:00:00Z",
                    "end": "2026-12-20T00:00:00Z",
                    "untilEndOfSupport": True,
                }
            ],
        ),
        "cluster.create.gcp.maintenanceExclusions[0].end",
        "no value with untilEndOfSupport",
    ),
    (
        "a no-upgrades exclusion until end of support",
        GKE_NEW,
        _set(
            ["gcp", "maintenanceExclusions"],
            [
                {
                    "name": "x",
                    "start": "2026-12-01T00:00:00Z",
                    "untilEndOfSupport": True,
                    "scope": "no-upgrades",
                }
            ],
        ),
        "cluster.create.gcp.maintenanceExclusions[0].untilEndOfSupport",
        "false with scope no-upgrades",
    ),
    (
        "a system pool max below min",
        GKE_NEW,
        _set(["gcp", "systemNodePool"], {"minPerZone": 2, "maxPerZone": 1}),
        "cluster.create.gcp.systemNodePool.maxPerZone",
        "at least systemNodePool.minPerZone (2)",
    ),
    (
        "EKS settings on a GKE cluster",
        GKE_NEW,
        _set(["aws", "vpc"], {"cidr": "10.0.0.0/16"}),
        "cluster.create.aws",
        "no value when cloud is gcp",
    ),
    (
        "a created GKE cluster without the Prometheus stack, even with Managed Prometheus",
        GKE_NEW,
        _without_prometheus_stack,
        "monitoring.installPrometheusStack",
        "true with cluster.create",
    ),
    (
        "a GKE Secrets key named by something other than its resource name",
        GKE_NEW,
        _set(["gcp", "secretsKmsKeyName"], "gke-secrets"),
        "cluster.create.gcp.secretsKmsKeyName",
        "projects/my-project/locations/us-central1/keyRings/gke/cryptoKeys/secrets",
    ),
    (
        "an EKS Secrets key of another region",
        EKS_NEW,
        _set(
            ["aws", "secretsKmsKeyArn"],
            "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        ),
        "cluster.create.aws.secretsKmsKeyArn",
        "a KMS key of the cluster's region, us-east-1",
    ),
    # container.v1 `Cluster.name` (googleapiclient discovery_cache container.v1.json, revision
    # 20261027): "up to 40 characters ... Lowercase letters, numbers, and hyphens only. Must
    # start with a letter. Must end with a number or a letter."
    *(
        (
            f"a GKE cluster name GKE refuses: {name}",
            GKE_NEW,
            lambda c, name=name: c["cluster"].update(name=name),
            "cluster.name",
            "a name GKE creates a cluster under: up to 40 lowercase letters, digits and hyphens",
        )
        for name in ("ML_Dev", "ml_dev", "ml-", "1ml", "m" * 41)
    ),
    (
        "a private EKS endpoint nothing but the nodes reaches",
        EKS_NEW,
        lambda c: create_of(c).pop("aws"),
        "cluster.create.aws.privateEndpointCidrs",
        "the networks `pulumi up` reaches the private endpoint from",
    ),
    (
        # A private stack that worked before the key existed: its runner a member of the
        # cluster security group, which admits its members (EKS user guide, sec-group-reqs.adoc).
        "a private EKS endpoint reached through the cluster security group",
        EKS_NEW,
        lambda c: create_of(c).pop("aws"),
        "cluster.create.aws.privateEndpointCidrs",
        "name the cluster security group (cluster.resourcesVpcConfig.clusterSecurityGroupId of"
        " `aws eks describe-cluster`) in aws.privateEndpointSecurityGroupIds",
    ),
    (
        "a private endpoint open to half the internet",
        EKS_NEW,
        _set(["aws", "privateEndpointCidrs"], ["10.8.0.0/16", "0.0.0.0/1"]),
        "cluster.create.aws.privateEndpointCidrs[1]",
        "narrower than the whole internet",
    ),
    (
        "a security group named by its name",
        EKS_NEW,
        _set(["aws", "privateEndpointSecurityGroupIds"], ["ci-runners"]),
        "cluster.create.aws.privateEndpointSecurityGroupIds[0]",
        "a security group id: 'sg-' and 8 or 17 hex digits",
    ),
    (
        "a security group twice",
        EKS_NEW,
        _set(["aws", "privateEndpointSecurityGroupIds"], ["sg-0123abcd", "sg-0123abcd"]),
        "cluster.create.aws.privateEndpointSecurityGroupIds[1]",
        "each once",
    ),
    (
        # Amazon VPC quotas: 60 inbound rules per security group by default.
        "more sources than a security group holds rules",
        EKS_NEW,
        _set(
            ["aws"],
            {
                "privateEndpointCidrs": [f"10.{i}.0.0/16" for i in range(31)],
                "privateEndpointSecurityGroupIds": [f"sg-{i:08x}" for i in range(30)],
            },
        ),
        "cluster.create.aws.privateEndpointSecurityGroupIds",
        "at most 60 groups and privateEndpointCidrs together",
    ),
    (
        "a created EKS cluster without the Prometheus stack",
        EKS_NEW,
        lambda c: c.pop("monitoring"),
        "monitoring.installPrometheusStack",
        "true with cluster.create",
    ),
]


@pytest.mark.parametrize(
    ("base", "change", "key", "allowed"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_a_bad_create_setting_is_refused_by_its_key(
    base: Config, change: Callable[[Config], None], key: str, allowed: str
) -> None:
    found = problems(changed(base, change))
    assert f"gpu-platform:{key}" in found, found
    assert allowed in found[f"gpu-platform:{key}"]


@pytest.mark.parametrize("name", ["m", "ml-dev-2", "m" * 40])
def test_a_gke_cluster_name_gke_creates_is_accepted(name: str) -> None:
    load_stack_config(changed(GKE_NEW, lambda c: c["cluster"].update(name=name)))


def test_an_attached_gke_clusters_name_is_not_held_to_gkes_creation_rule() -> None:
    # Attaching names a cluster that exists: the rule is for the one the stack creates.
    attached = changed(GKE_NEW, lambda c: c["cluster"].pop("create"))
    attached["cluster"]["name"] = "ML_Dev"
    attached.pop("monitoring")

    assert load_stack_config(attached).cluster.name == "ML_Dev"


def test_good_gke_settings_are_accepted() -> None:
    config = changed(
        GKE_NEW,
        _set(
            ["gcp"],
            {
                "releaseChannel": "none",
                "version": "1.35.1-gke.1000",
                "maintenanceWindow": {"days": ["SA", "SU"], "durationHours": 6},
                "maintenanceExclusions": [
                    {
                        "name": "launch",
                        "start": "2026-12-01T00:00:00Z",
                        "end": "2026-12-20T00:00:00Z",
                        "scope": "no-upgrades",
                    }
                ],
            },
        ),
    )
    create = load_stack_config(config).cluster.create
    assert create is not None and create.gcp.version == "1.35.1-gke.1000"


def test_the_network_policy_agent_may_not_be_set_among_the_vpc_cni_configuration() -> None:
    # The platform sets it (EKS user guide, cni-network-policy-configure.adoc), so that the
    # NetworkPolicies guarding Prometheus and Alertmanager are enforced.
    raw = changed(
        EKS_NEW,
        lambda c: create_of(c)["aws"].update(
            vpcCniConfiguration={"enableNetworkPolicy": "false", "env": {"WARM_IP_TARGET": "5"}}
        ),
    )

    assert problems(raw) == {
        "gpu-platform:cluster.create.aws.vpcCniConfiguration.enableNetworkPolicy": (
            'no value: the platform sets it to "true", so that the NetworkPolicies keeping'
            " tenants from Prometheus and Alertmanager are enforced"
        )
    }

"""The cluster autoscaler on EKS: the pinned chart, the image for the cluster's Kubernetes
version, Pod Identity with a least-privilege policy, GPU-aware settings, and leaving it out."""

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from gpu_platform.config import ConfigError
from gpu_platform.eks import cluster_autoscaler
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.offline.stand_ins import aws as stand_in
from gpu_platform.versions import (
    CLUSTER_AUTOSCALER_CHART,
    CLUSTER_AUTOSCALER_IMAGES,
    ContainerImage,
)
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

from .plans import RELEASE, asg_tags, problems_of, with_aws_options, with_extra_pool, with_pool
from .priority_expander import best_options, parsed_priorities, rendered_config_map

Config = dict[str, Any]
PlanFor = Callable[[Config], Plan]
COMPONENT = "gpu-platform:eks:ClusterAutoscaler"
ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/rolePolicy:RolePolicy"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
NAMESPACE = "kubernetes:core/v1:Namespace"

# The chart's values as its README's "Values" table documents them (charts/cluster-autoscaler in
# kubernetes/autoscaler); the entries of object-typed ones (`extraArgs`, `resources`, the
# security contexts) are free-form. A misspelt key is silently ignored by Helm, so every key
# the program sets must be one of these.
# A release of the AL2023 NVIDIA AMI whose driver the platform knows, per Kubernetes minor: a
# pool's release must be built for its cluster's version.
AL2023_RELEASES = {
    "1.33": "1.33.13-20260714",
    "1.34": "1.34.9-20260714",
    "1.35": "1.35.6-20260714",
    "1.36": "1.36.2-20260714",
}

CHART_VALUE_KEYS = frozenset(
    {
        "additionalLabels",
        "affinity",
        "autoDiscovery.clusterName",
        "autoDiscovery.tags",
        "autoscalingGroups",
        "awsRegion",
        "cloudProvider",
        "containerSecurityContext",
        "customArgs",
        "dnsPolicy",
        "expanderPriorities",
        "extraArgs",
        "extraEnv",
        "fullnameOverride",
        "image.pullPolicy",
        "image.repository",
        "image.tag",
        "nameOverride",
        "nodeSelector",
        "podAnnotations",
        "podDisruptionBudget",
        "podLabels",
        "priorityClassName",
        "rbac.create",
        "rbac.serviceAccount.annotations",
        "rbac.serviceAccount.create",
        "rbac.serviceAccount.name",
        "replicaCount",
        "resources",
        "securityContext",
        "serviceMonitor.enabled",
        "tolerations",
        "updateStrategy",
    }
)


def release(plan: Plan) -> PlannedResource:
    return plan.named("cluster-autoscaler", RELEASE)


def value_keys(values: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Dotted paths of the values, stopping at a documented key."""
    for key, value in values.items():
        path = prefix + key
        if path in CHART_VALUE_KEYS or not isinstance(value, Mapping):
            yield path
        else:
            yield from value_keys(value, path + ".")


def policy_of(plan: Plan) -> dict[str, Any]:
    return json.loads(plan.named("cluster-autoscaler-policy", POLICY).inputs["policy"])


def with_cluster_version(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    def cluster(args: dict[str, Any]) -> dict[str, Any]:
        return {**stand_in.get_cluster(args), "version": version}

    token = "aws:eks/getCluster:getCluster"
    monkeypatch.setitem(stand_in.INVOKES, token, cluster)


# --- The release -------------------------------------------------------------------------------


def test_chart_is_the_pinned_one_from_the_autoscaler_repository(dev_plan: Plan) -> None:
    inputs = release(dev_plan).inputs

    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]) == (
        "cluster-autoscaler",
        CLUSTER_AUTOSCALER_CHART.version,
        {"repo": "https://kubernetes.github.io/autoscaler"},
    )


# --- Its namespace ------------------------------------------------------------------------------


def test_it_runs_in_the_platforms_restricted_namespace_not_kube_system(dev_plan: Plan) -> None:
    """Out of kube-system, a preview reads its Helm release record (a Secret) without any access
    to kube-system's Secrets (docs/ci.md)."""
    namespace = dev_plan.named("cluster-autoscaler", NAMESPACE)

    assert release(dev_plan).inputs["namespace"] == "gpu-platform-system"
    assert namespace.inputs["metadata"]["name"] == "gpu-platform-system"
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == (
        "restricted"
    )
    assert namespace.urn in release(dev_plan).dependencies


def test_a_namespace_of_the_users_is_used_and_not_created(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:autoscaler"] = {"namespace": "kube-system"}

    plan = plan_for(dev_config)

    assert release(plan).inputs["namespace"] == "kube-system"
    assert "gpu-platform-system" not in {
        n.inputs["metadata"]["name"] for n in plan.of_type(NAMESPACE)
    }


def test_a_moved_autoscaler_starts_only_once_the_old_one_is_gone(dev_plan: Plan) -> None:
    """pulumi-kubernetes replaces a release whose `namespace` changes, creating the new one
    first unless told otherwise (`forceNewFields`, `DeleteBeforeReplace: false`,
    provider/pkg/provider/helm_release.go at v4.32.0). The chart gives the autoscaler its own
    namespace as `--namespace` (cluster-autoscaler/charts/cluster-autoscaler/templates/
    deployment.yaml at cluster-autoscaler-chart-9.59.0), where it takes its leader lease
    (`resourcelock.New(..., autoscalingOpts.ConfigNamespace, ...)`, cluster-autoscaler/main.go
    at cluster-autoscaler-1.35.0): the old and the new one would both lead, and both resize."""
    assert release(dev_plan).delete_before_replace is True


def test_the_autoscaler_never_drains_its_own_node(dev_plan: Plan) -> None:
    """Outside kube-system, `skip-nodes-with-system-pods` no longer covers it; the annotation
    does (cluster-autoscaler/FAQ.md at cluster-autoscaler-1.35.0, "What types of pods can
    prevent CA from removing a node?")."""
    annotations = release(dev_plan).inputs["values"]["podAnnotations"]

    assert annotations == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}


def test_release_is_installed_through_the_clusters_provider(dev_plan: Plan) -> None:
    (provider,) = dev_plan.of_type("pulumi:providers:kubernetes")

    assert str(release(dev_plan).provider).startswith(provider.urn + "::")


def test_image_matches_the_clusters_kubernetes_minor(dev_plan: Plan) -> None:
    image = release(dev_plan).inputs["values"]["image"]

    # The stand-in cluster runs Kubernetes 1.35.
    assert f"{image['repository']}:{image['tag']}" == CLUSTER_AUTOSCALER_IMAGES["1.35"].reference
    assert image["tag"].startswith("v1.35.")


def test_a_pinned_digest_goes_after_the_tag_the_chart_renders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The chart renders the image as `<repository>:<tag>` (charts/cluster-autoscaler/templates/
    # deployment.yaml), so the digest rides on the tag.
    digest = "sha256:" + "5e" * 32
    pinned = ContainerImage("registry.k8s.io/autoscaling/cluster-autoscaler", "v1.35.2", digest)
    monkeypatch.setitem(cluster_autoscaler.CLUSTER_AUTOSCALER_IMAGES, "1.35", pinned)

    image = release(run_program("dev", project=PROJECT)).inputs["values"]["image"]

    assert f"{image['repository']}:{image['tag']}" == (
        f"registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2@{digest}"
    )


@pytest.mark.parametrize("version", sorted(CLUSTER_AUTOSCALER_IMAGES))
def test_every_supported_version_gets_its_own_autoscaler_minor(
    dev_config: Config,
    plan_for: PlanFor,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
) -> None:
    with_cluster_version(monkeypatch, version)
    with_aws_options(dev_config, amiReleaseVersion=AL2023_RELEASES[version])

    tag = release(plan_for(dev_config)).inputs["values"]["image"]["tag"]

    assert tag.startswith(f"v{version}.")


def test_image_tag_from_config_overrides_the_pinned_one(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:autoscaler"] = {"imageTag": "v1.35.9"}

    image = release(plan_for(dev_config)).inputs["values"]["image"]

    assert image == {
        "repository": "registry.k8s.io/autoscaling/cluster-autoscaler",
        "tag": "v1.35.9",
    }


def test_an_image_tag_with_a_semver_build_is_refused_by_key(
    dev_config: Config, failed_plan_for: PlanFor
) -> None:
    # An exact version, but no image tag: distribution/reference regexp.go's tag grammar is
    # `[\w][\w.-]{0,127}`, which the policy pack holds the autoscaler release's `image.tag` to
    # (under prod's policy config the stack would fail it).
    dev_config["gpu-platform:autoscaler"] = {"imageTag": "v1.35.2+build.1"}

    plan = failed_plan_for(dev_config)

    assert isinstance(plan.error, ConfigError)
    assert plan.error.report().splitlines()[1:] == [
        '  gpu-platform:autoscaler.imageTag: got "v1.35.2+build.1"; expected an image tag such'
        " as v1.35.2: letters, digits, '_', '.' and '-', up to 128, from a letter, digit or '_'"
        " (no '+': an image reference cannot hold a SemVer build)"
    ]


def test_a_cluster_version_without_an_autoscaler_release_is_a_config_error(
    dev_config: Config, failed_plan_for: PlanFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_cluster_version(monkeypatch, "1.29")

    plan = failed_plan_for(dev_config)

    assert "Kubernetes 1.29" in problems_of(plan)["gpu-platform:autoscaler.imageTag"]
    assert plan.resources == []


def test_values_discover_this_clusters_groups_in_its_region(dev_plan: Plan) -> None:
    values = release(dev_plan).inputs["values"]

    assert values["cloudProvider"] == "aws"
    assert values["awsRegion"] == "us-east-1"
    assert values["autoDiscovery"] == {"clusterName": "ml-dev"}


def test_values_set_only_keys_the_chart_has(dev_plan: Plan) -> None:
    values = release(dev_plan).inputs["values"]

    assert set(value_keys(values)) <= CHART_VALUE_KEYS


def test_gpu_aware_settings_come_from_config(dev_config: Config, plan_for: PlanFor) -> None:
    dev_config["gpu-platform:autoscaler"] = {
        "balanceSimilarNodeGroups": False,
        "expander": "most-pods",
    }

    dev_config["gpu-platform:pools"][0]["validation"] = {"enabled": False}

    args = release(plan_for(dev_config)).inputs["values"]["extraArgs"]

    # The cooldown after a scale-up at the GPU nodes' unneeded time (9 minutes by default),
    # under its upstream default of 10 (`--scale-down-delay-after-add`,
    # cluster-autoscaler/config/flags/flags.go, cluster-autoscaler-1.33.6 to 1.36.1).
    assert args == {
        "balance-similar-node-groups": False,
        "expander": "most-pods",
        "scale-down-delay-after-add": "9m0s",
    }


def test_a_validating_node_is_neither_timed_out_nor_removed(
    dev_config: Config, plan_for: PlanFor
) -> None:
    with_extra_pool(
        dev_config,
        name="a100",
        instanceTypes=["p4d.24xlarge"],
        max=2,
        validation={"dcgmDiagLevel": 2},
    )

    args = release(plan_for(dev_config)).inputs["values"]["extraArgs"]

    # The cluster autoscaler backs a group off when its new node has not started within
    # `--max-node-provision-time` and counts it unready past `--max-node-startup-time` (15
    # minutes each, config/flags/flags.go; clusterstate/clusterstate.go; cluster-autoscaler-
    # 1.35.2), and a node still validating has not started. The longest pool's: 900 s for the
    # node's start, then the 8-GPU a100's validation at level 2: 300 s for the pod's start, 60 s
    # each for `nvidia-smi -q -x` and `nvlink --status`, 900 s for `dcgmi diag -r 2` and 600 s
    # for the NCCL test, 2820 s in all; the one-GPU t4's at level 1 is 900 + 300 + 60 + 60 + 300.
    assert (args["max-node-provision-time"], args["max-node-startup-time"]) == ("47m0s", "47m0s")


def test_defaults_balance_similar_groups_and_rank_by_capacity_then_waste(dev_plan: Plan) -> None:
    args = release(dev_plan).inputs["values"]["extraArgs"]

    assert args["balance-similar-node-groups"] is True
    assert args["expander"] == "priority,least-waste"


def test_balancing_ignores_the_nodegroup_name_label_each_zonal_group_has(dev_plan: Plan) -> None:
    args = release(dev_plan).inputs["values"]["extraArgs"]

    # EKS tags each Auto Scaling group `eks:nodegroup-name`, which the AWS template turns into
    # the label `nodegroup-name` (extractLabelsFromAsg, cloudprovider/aws/aws_manager.go,
    # cluster-autoscaler-1.35.2), and which the AWS comparator does not ignore
    # (processors/nodegroupset/aws_nodegroups.go, same tag; kubernetes/autoscaler#6954).
    assert args["balancing-ignore-label"] == "nodegroup-name"


def test_the_chart_passes_the_balancing_flag_as_one_argument(dev_plan: Plan) -> None:
    args = release(dev_plan).inputs["values"]["extraArgs"]

    # templates/deployment.yaml (chart 9.59.0): `--{{ $key | mustRegexFind "^[^_]+" }}=...`.
    rendered = [f"--{key.partition('_')[0]}={value}" for key, value in args.items()]

    assert "--balancing-ignore-label=nodegroup-name" in rendered


def with_pools_of_every_capacity(config: Config) -> Config:
    with_extra_pool(config, name="l4", instanceTypes=["g6.xlarge"], max=2, capacity="on-demand")
    with_extra_pool(config, name="l4-2", instanceTypes=["g6.xlarge"], max=2, capacity="spot")
    with_extra_pool(
        config,
        name="a10g",
        instanceTypes=["g5.xlarge"],
        max=2,
        capacity="reserved",
        zones=["us-east-1a"],
        aws={"capacityReservationId": "cr-0fedcba9876543210"},
    )
    return with_extra_pool(
        config,
        name="h100",
        instanceTypes=["p5.48xlarge"],
        max=1,
        capacity="capacity-block",
        zones=["us-east-1a"],
        aws={"capacityReservationId": "cr-0123456789abcdef0"},
    )


def priorities_config_map(plan: Plan) -> dict[str, Any]:
    config_map = rendered_config_map(release(plan).inputs["values"])
    assert config_map is not None
    return config_map


# A CPU node group of the cluster, as EKS names a managed node group's Auto Scaling group.
CPU_GROUP = "eks-general-purpose-20250101000000000000000001-2cc0e0f5-1f53-8b52-e5d2-d4eaa1e0b5b2"


def test_the_priority_expander_ranks_other_groups_then_blocks_reservations_on_demand_spot(
    dev_config: Config, plan_for: PlanFor
) -> None:
    config_map = priorities_config_map(plan_for(with_pools_of_every_capacity(dev_config)))
    # An optional zone, for pools with a node group per zone, then the unique suffix.
    zone = "[a-z]{2}(?:-[a-z]+)+-[0-9]+(?:[a-z]|-[a-z]+-[0-9]+[a-z])"
    suffix = f"-(?:(?P<zone>{zone})-)?[0-9]{{18}}[0-9a-f]{{8}}-"

    # expander/priority/priority.go (cluster-autoscaler-1.35.2): higher wins.
    levels = {
        level: [e.pattern for e in expressions]
        for level, expressions in parsed_priorities(config_map).items()
    }
    assert list(levels) == [50, 40, 30, 20, 10, 1]
    assert {level: levels[level] for level in (40, 30, 20, 10)} == {
        40: [f"^eks-h100{suffix}"],
        30: [f"^eks-a10g{suffix}"],
        20: [f"^eks-l4{suffix}"],
        10: [f"^eks-t4\\-shared{suffix}", f"^eks-l4\\-2{suffix}"],
    }


def test_a_cpu_pod_that_tolerates_the_gpu_taint_grows_the_cpu_group(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_pools_of_every_capacity(dev_config))
    gpu_groups = [asg_name(plan, pool) for pool in ("t4-shared", "l4", "a10g", "h100")]

    # The pod fits the CPU group and every GPU template: BestOptions (expander/priority/
    # priority.go, cluster-autoscaler-1.35.2) must keep the CPU group alone.
    best = best_options(priorities_config_map(plan), [*gpu_groups, CPU_GROUP])

    assert best == [CPU_GROUP]


def test_a_gpu_pod_still_grows_the_capacity_already_paid_for(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_pools_of_every_capacity(dev_config))
    groups = {pool: asg_name(plan, pool) for pool in ("t4-shared", "l4", "a10g", "h100")}

    best = best_options(priorities_config_map(plan), list(groups.values()))

    assert best == [groups["h100"]]


def test_a_canary_ranks_below_the_pool_it_leads() -> None:
    # cluster-autoscaler-1.35.2 (the same from 1.33.6 to 1.36.1): `BestOptions` in
    # expander/priority/priority.go keeps every option of the highest priority; chain.go hands
    # what is left to the next filter (least-waste, which ties on the identical templates of a
    # canary and its pool) and then to expander/random's `BestOption`, a uniform pick. Tied,
    # a pod that selects neither pool would start a canary node half the time.
    plan = shared_plan("prod")
    config_map = priorities_config_map(plan)
    priorities = parsed_priorities(config_map)
    led, canary = asg_name(plan, "a100-inference"), asg_name(plan, "a100-canary")

    # Each group at the highest level an expression of it matches, as `BestOptions` keeps it.
    levels = {
        group: max(level for level, es in priorities.items() if any(e.search(group) for e in es))
        for group in (asg_name(plan, "h100-training"), led, canary)
    }

    # Pulumi.prod.yaml: both A100 pools and h100-training are on demand (20).
    assert levels == {asg_name(plan, "h100-training"): 20, led: 20, canary: 5}
    assert best_options(config_map, [canary, led]) == [led]
    # A pod that selects the canary fits its group alone.
    assert best_options(config_map, [canary]) == [canary]


def test_a_canary_ranks_below_its_pool_whatever_its_own_capacity(
    dev_config: Config, plan_for: PlanFor
) -> None:
    # An on-demand canary (20 of its own) of the dev stack's spot pool (10): below the spot
    # pool, above only the lookalike groups.
    (pool,) = dev_config["gpu-platform:pools"]
    dev_config["gpu-platform:pools"].append(
        {**pool, "name": "t4-canary", "canaryOf": "t4-shared", "capacity": "on-demand"}
    )
    plan = plan_for(dev_config)
    config_map = priorities_config_map(plan)
    priorities = parsed_priorities(config_map)
    led, canary = asg_name(plan, "t4-shared"), asg_name(plan, "t4-canary")

    assert list(priorities) == [50, 10, 5, 1]
    assert [e.search(canary) is not None for e in priorities[5]] == [True]
    assert best_options(config_map, [canary, led]) == [led]


def test_every_group_the_autoscaler_sees_matches_an_expression(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_pools_of_every_capacity(dev_config))
    priorities = parsed_priorities(priorities_config_map(plan))
    # The cluster's own groups, EKS-managed or not, and one named like a pool's.
    others = [
        CPU_GROUP,
        "eks-t4-2cc0e0f5-1f53-8b52-e5d2-d4eaa1e0b5b2",
        "eks-",
        "eks",
        "",
        "karpenter-managed",
        "eks-l4-workers-2cc0e0f5-1f53-8b52-e5d2-d4eaa1e0b5b2",
    ]

    levels = {
        group: max(level for level, es in priorities.items() if any(e.search(group) for e in es))
        for group in [*others, asg_name(plan, "l4-2")]
    }

    assert levels == {
        CPU_GROUP: 50,
        "eks-t4-2cc0e0f5-1f53-8b52-e5d2-d4eaa1e0b5b2": 50,
        "eks-": 50,
        "eks": 50,
        "": 50,
        "karpenter-managed": 50,
        # Begins like the l4 pool's groups, but is none of them.
        "eks-l4-workers-2cc0e0f5-1f53-8b52-e5d2-d4eaa1e0b5b2": 1,
        asg_name(plan, "l4-2"): 10,
    }


def test_each_pools_expression_matches_its_own_group_and_no_other(
    dev_config: Config, plan_for: PlanFor
) -> None:
    plan = plan_for(with_pools_of_every_capacity(dev_config))
    priorities = parsed_priorities(priorities_config_map(plan))
    expressions = [e for level in (40, 30, 20, 10) for e in priorities[level]]
    groups = {pool: asg_name(plan, pool) for pool in ("t4-shared", "l4", "l4-2", "a10g", "h100")}

    matches = {pool: [e for e in expressions if e.search(group)] for pool, group in groups.items()}

    assert all(len(found) == 1 for found in matches.values()), matches
    assert len({found[0] for found in matches.values()}) == len(groups)
    assert not any(e.search(g) for e in priorities[50] for g in groups.values())


def test_per_zone_groups_match_their_pools_expression_and_no_other(
    dev_config: Config, plan_for: PlanFor
) -> None:
    config = with_pools_of_every_capacity(dev_config)
    with_pool(config, zones=["us-east-1a", "us-east-1b", "us-east-1c"])
    with_aws_options(config, nodeGroupPerZone=True)
    plan = plan_for(config)
    priorities = parsed_priorities(priorities_config_map(plan))
    zonal = {
        str(tag.inputs["autoscalingGroupName"])
        for tag in plan.of_type("aws:autoscaling/tag:Tag")
        if tag.parent == plan.named("t4-shared", "gpu-platform:eks:GpuNodeGroup").urn
    }

    assert len(zonal) == 3
    for group in zonal:
        matched = [(level, e) for level, es in priorities.items() for e in es if e.search(group)]
        # The pool's own expression, and the catch-all for names like a pool's below it.
        assert matched == [(10, priorities[10][0]), (1, priorities[1][0])]


def test_other_expanders_get_no_priorities(dev_config: Config, plan_for: PlanFor) -> None:
    dev_config["gpu-platform:autoscaler"] = {"expander": "least-waste"}

    values = release(plan_for(dev_config)).inputs["values"]

    assert "expanderPriorities" not in values
    assert rendered_config_map(values) is None


def asg_name(plan: Plan, pool: str) -> str:
    (name,) = {
        tag.inputs["autoscalingGroupName"]
        for tag in plan.of_type("aws:autoscaling/tag:Tag")
        if tag.parent == plan.named(pool, "gpu-platform:eks:GpuNodeGroup").urn
    }
    return str(name)


def test_autoscaler_pod_runs_as_non_root_without_privileges(dev_plan: Plan) -> None:
    values = release(dev_plan).inputs["values"]

    assert values["securityContext"]["runAsNonRoot"] is True
    assert values["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert values["containerSecurityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


# --- Its AWS identity ---------------------------------------------------------------------------


def test_pod_identity_ties_the_service_account_to_the_role(dev_plan: Plan) -> None:
    association = dev_plan.named("cluster-autoscaler-pod-identity", ASSOCIATION).inputs
    values = release(dev_plan).inputs["values"]

    assert association["clusterName"] == "ml-dev"
    assert association["namespace"] == release(dev_plan).inputs["namespace"]
    assert association["serviceAccount"] == values["rbac"]["serviceAccount"]["name"]
    assert association["roleArn"].endswith(":role/ml-dev.cluster-autoscaler")


def test_release_waits_for_its_credentials(dev_plan: Plan) -> None:
    association = dev_plan.named("cluster-autoscaler-pod-identity", ASSOCIATION)
    policy = dev_plan.named("cluster-autoscaler-policy", POLICY)

    assert {association.urn, policy.urn} <= set(release(dev_plan).dependencies)


def test_role_trusts_eks_pod_identity_for_this_cluster_only(dev_plan: Plan) -> None:
    trust = json.loads(dev_plan.named("cluster-autoscaler-role", ROLE).inputs["assumeRolePolicy"])

    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {
                "StringEquals": {
                    "aws:SourceAccount": "123456789012",
                    "aws:RequestTag/kubernetes-namespace": "gpu-platform-system",
                    "aws:RequestTag/kubernetes-service-account": "cluster-autoscaler",
                },
                "ArnEquals": {"aws:SourceArn": "arn:aws:eks:us-east-1:123456789012:cluster/ml-dev"},
            },
        }
    ]


def test_policy_reads_managed_node_groups_of_this_cluster(dev_plan: Plan) -> None:
    statements = {s["Sid"]: s for s in policy_of(dev_plan)["Statement"]}

    assert statements["ReadNodeGroups"]["Action"] == "eks:DescribeNodegroup"
    assert statements["ReadNodeGroups"]["Resource"] == (
        "arn:aws:eks:us-east-1:123456789012:nodegroup/ml-dev/*/*"
    )


def test_policy_changes_only_groups_tagged_as_this_clusters(dev_plan: Plan) -> None:
    statements = policy_of(dev_plan)["Statement"]
    writes = [s for s in statements if not all(_reads(a) for a in _actions(s))]

    assert [s["Sid"] for s in writes] == ["ScaleOwnGroups"]
    (scale,) = writes
    assert sorted(scale["Action"]) == [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ]
    assert scale["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/ml-dev": "owned"}
    }
    assert asg_tags(dev_plan)["k8s.io/cluster-autoscaler/ml-dev"] == "owned"


def test_policy_reads_what_discovery_and_templates_need(dev_plan: Plan) -> None:
    reads = {a for s in policy_of(dev_plan)["Statement"] for a in _actions(s) if _reads(a)}

    assert {
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeTags",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplateVersions",
        "eks:DescribeNodegroup",
    } <= reads


def _reads(action: str) -> bool:
    return action.partition(":")[2].startswith(("Describe", "Get", "List"))


def _actions(statement: Mapping[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


# --- Leaving it out -----------------------------------------------------------------------------


def test_clusters_running_their_own_autoscaler_get_none_but_keep_the_hints(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:autoscaler"] = {"install": False}

    plan = plan_for(dev_config)

    assert plan.of_type(COMPONENT) == []
    assert [r.name for r in plan.of_type(RELEASE)] == ["gpu-operator", "kueue"]
    assert [a.inputs["serviceAccount"] for a in plan.of_type(ASSOCIATION)] == ["aws-node"]
    assert "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu" in asg_tags(plan)


def own_autoscaler_config_map(plan: Plan) -> dict[str, Any]:
    """The ConfigMap a user makes from the stack output `ownAutoscaler`."""
    config_map = plan.outputs["ownAutoscaler"]["priorityConfigMap"]
    return {"metadata": {"name": config_map["name"]}, "data": {"priorities": config_map["data"]}}


def test_a_cluster_running_its_own_autoscaler_is_told_the_flags_it_needs(
    dev_config: Config, plan_for: PlanFor
) -> None:
    dev_config["gpu-platform:autoscaler"] = {"install": False}

    plan = plan_for(dev_config)

    # Spelt as pflag reads them (config/flags/flags.go, cluster-autoscaler-1.35.2): the priority
    # expander then least-waste, balancing, and the label that names each zonal group
    # (kubernetes/autoscaler#6954, processors/nodegroupset/aws_nodegroups.go), and the start
    # times a validated node needs (test_a_validating_node_is_neither_timed_out_nor_removed),
    # and the cooldown after a scale-up at the GPU nodes' 9 unneeded minutes
    # (test_gpu_aware_settings_come_from_config).
    assert plan.outputs["ownAutoscaler"]["flags"] == [
        "--balance-similar-node-groups=true",
        "--balancing-ignore-label=nodegroup-name",
        "--expander=priority,least-waste",
        "--scale-down-delay-after-add=9m0s",
        "--max-node-provision-time=27m0s",
        "--max-node-startup-time=27m0s",
    ]
    # `PriorityConfigMapName` and `ConfigMapKey`, expander/priority/priority.go (1.35.2).
    assert plan.outputs["ownAutoscaler"]["priorityConfigMap"]["name"] == (
        "cluster-autoscaler-priority-expander"
    )
    assert plan.outputs["ownAutoscaler"]["priorityConfigMap"]["key"] == "priorities"


def test_the_priorities_given_to_a_clusters_own_autoscaler_keep_cpu_pods_off_gpu_pools(
    dev_config: Config, plan_for: PlanFor
) -> None:
    config = with_pools_of_every_capacity(dev_config)
    config["gpu-platform:autoscaler"] = {"install": False}
    plan = plan_for(config)
    gpu_groups = [asg_name(plan, pool) for pool in ("t4-shared", "l4", "a10g", "h100")]

    # BestOptions (expander/priority/priority.go, cluster-autoscaler-1.35.2) over the ConfigMap
    # made from the output: the CPU group alone for a CPU pod, capacity paid for for a GPU pod.
    config_map = own_autoscaler_config_map(plan)
    assert best_options(config_map, [*gpu_groups, CPU_GROUP]) == [CPU_GROUP]
    assert best_options(config_map, gpu_groups) == [asg_name(plan, "h100")]


def test_a_stack_that_installs_the_autoscaler_exports_no_settings_for_one(
    dev_config: Config, plan_for: PlanFor
) -> None:
    assert "ownAutoscaler" not in plan_for(dev_config).outputs

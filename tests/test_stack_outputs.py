"""What a stack exports for the teams that use it."""

import copy
import json
import re

import pytest

from gpu_platform.fit import fits
from gpu_platform.offline.fit import node_templates
from gpu_platform.offline.program import run_program
from gpu_platform.offline.stand_ins import aws as stand_in
from gpu_platform.stack_files import stack_config
from tests.gpu_platform.eks.test_karpenter_node_pool import order_by_weight
from tests.repository import PROJECT, ROOT
from tests.shared_plans import shared_plan

POOL = "t4-shared"


def smoke_test_pod(plan) -> dict:
    (job,) = plan.of_type("kubernetes:batch/v1:Job")
    return job.inputs["spec"]["template"]["spec"]


def test_kubeconfig_is_exported_only_as_a_secret(dev_plan) -> None:
    assert "kubeconfig" in dev_plan.outputs and "kubeconfig" in dev_plan.secret_outputs


def test_gpu_operator_version_is_the_pinned_chart(dev_plan) -> None:
    release = dev_plan.named("gpu-operator", "kubernetes:helm.sh/v3:Release")

    assert dev_plan.outputs["gpuOperatorVersion"] == release.inputs["version"]


def test_prometheus_rule_names_are_the_alerts_deployed(dev_plan) -> None:
    (rule,) = dev_plan.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")
    deployed = [
        r["alert"] for g in rule.inputs["spec"]["groups"] for r in g["rules"] if "alert" in r
    ]

    assert dev_plan.outputs["prometheusRuleNames"] == deployed


def test_each_pool_exports_its_labels_and_taints(dev_plan) -> None:
    pool = dev_plan.outputs["pools"][POOL]

    assert pool["labels"]["gpu-platform.io/pool"] == POOL
    # Every taint its nodes carry, the validation taint a new node joins with included; the
    # exported workload tolerates all but that one.
    assert pool["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {
            "key": "startup-taint.cluster-autoscaler.kubernetes.io/gpu-validation",
            "value": "pending",
            "effect": "NoSchedule",
        },
    ]
    assert pool["workload"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]


def test_exported_placement_is_what_the_smoke_test_pod_uses(dev_plan) -> None:
    workload = dev_plan.outputs["pools"][POOL]["workload"]
    pod = smoke_test_pod(dev_plan)

    assert workload["tolerations"] == pod["tolerations"]
    assert workload["affinity"] == pod["affinity"]
    assert workload["resource"] in pod["containers"][0]["resources"]["limits"]


def test_each_pool_exports_the_annotation_that_keeps_its_jobs_from_eviction(dev_plan) -> None:
    workload = dev_plan.outputs["pools"][POOL]["workload"]

    assert workload["annotations"] == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}


def test_a_gke_pool_exports_the_annotation_gkes_autoscaler_reads() -> None:
    (workload,) = [p["workload"] for p in shared_plan("gke-dev").outputs["pools"].values()]

    assert workload["annotations"] == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}


def test_a_karpenter_stacks_pools_export_the_annotation_karpenter_reads() -> None:
    pools = shared_plan("karpenter-dev").outputs["pools"]

    # For batch Jobs; Deployments get none, so that drift moves them (docs/karpenter.md).
    jobs = {"karpenter.sh/do-not-disrupt": "true"}
    assert {name: p["workload"]["annotations"] for name, p in pools.items()} == dict.fromkeys(
        ("h100-block", "l4-reserved", "t4-spot", "l4-on-demand"), jobs
    )
    assert {json.dumps(p["workload"]["deploymentAnnotations"]) for p in pools.values()} == {"{}"}


@pytest.mark.parametrize("stack", ["dev", "gke-dev", "prod", "karpenter-dev", "dra-dev"])
def test_helm_release_namespaces_are_where_the_stack_installs_releases(stack: str) -> None:
    # The namespaces in which a preview must read Secrets (Helm's release records); docs/ci.md
    # scopes the preview identity's Secret reads to them.
    plan = shared_plan(stack)
    releases = plan.of_type("kubernetes:helm.sh/v3:Release")

    assert plan.outputs["helmReleaseNamespaces"] == sorted(
        {r.inputs["namespace"] for r in releases}
    )


@pytest.mark.parametrize("stack", ["dev", "gke-dev", "prod"])
def test_no_stack_without_karpenter_keeps_a_release_in_kube_system(stack: str) -> None:
    # So that its preview reads no Secret of kube-system: the autoscaler runs in
    # gpu-platform-system and the EFA plugin in the operator's namespace (docs/ci.md).
    plan = shared_plan(stack)

    assert "kube-system" not in plan.outputs["helmReleaseNamespaces"]


def test_the_documented_preview_access_scope_is_the_dev_stacks_release_namespaces(
    dev_plan,
) -> None:
    ci = (ROOT / "docs" / "ci.md").read_text()
    # The preview role's and the plan role's access entries: both read the release namespaces.
    scopes = re.findall(r"--access-scope type=namespace,namespaces=(\S+)", ci)

    assert len(scopes) == 2
    for scope in scopes:
        assert scope.split(",") == dev_plan.outputs["helmReleaseNamespaces"]


def test_node_subnets_are_the_used_ones_then_those_left_out_each_by_zone(dev_plan) -> None:
    subnets = dev_plan.outputs["nodeSubnets"]
    private = sorted(
        (zone, s)
        for s, (zone, public) in stand_in.cluster_subnets("us-east-1").items()
        if not public
    )
    (public,) = [s for s, (_, public) in stand_in.cluster_subnets("us-east-1").items() if public]

    assert [(s["zone"], s["id"]) for s in subnets["used"]] == private
    assert [(s["zone"], s["id"]) for s in subnets["leftOut"]] == [("us-east-1a", public)]


def test_node_subnets_say_why_each_is_used_or_left_out(dev_plan) -> None:
    subnets = dev_plan.outputs["nodeSubnets"]

    assert re.fullmatch(
        r"private: route table rtb-[0-9a-f]{17} \(the VPC's main\) sends 0\.0\.0\.0/0 to"
        r" nat-[0-9a-f]{17}",
        subnets["used"][0]["why"],
    )
    assert re.fullmatch(
        r"private: route table rtb-[0-9a-f]{17} sends 0\.0\.0\.0/0 to nat-[0-9a-f]{17}",
        subnets["used"][1]["why"],
    )
    assert re.fullmatch(
        r"public: route table rtb-[0-9a-f]{17} sends 0\.0\.0\.0/0 to igw-[0-9a-f]{17}",
        subnets["leftOut"][0]["why"],
    )


def test_node_subnets_are_secret_where_the_cluster_config_is(dev_config, plan_for) -> None:
    dev_config["gpu-platform:cluster"]["kubeconfigContext"] = {"secure": "v1:ciphertext"}

    plan = plan_for(dev_config)

    assert "nodeSubnets" in plan.secret_outputs


def test_a_gke_stack_exports_no_node_subnets() -> None:
    assert "nodeSubnets" not in shared_plan("gke-dev").outputs


def test_a_gke_stack_exports_the_node_service_accounts_the_deploy_identity_acts_as() -> None:
    # docs/iam/gke-deploy-roles.json: `roles/iam.serviceAccountUser` on each of them.
    outputs = shared_plan("gke-dev").outputs

    assert outputs["nodeServiceAccounts"] == {
        "l4-shared": "gpu-l4-shared-954376@acme-ml-dev.iam.gserviceaccount.com"
    }


def test_a_pod_placed_by_gpu_model_fits_the_block_and_on_demand_and_starts_in_the_block() -> None:
    config = copy.deepcopy(stack_config("karpenter-dev", PROJECT))
    block = next(p for p in config["gpu-platform:pools"] if p["name"] == "h100-block")
    on_demand = {**copy.deepcopy(block), "name": "h100-od", "capacity": "on-demand"}
    del on_demand["aws"]["capacityReservationId"]
    config["gpu-platform:pools"].append(on_demand)
    plan = run_program("karpenter-dev", config, project=PROJECT)
    placement = plan.outputs["gpuModels"]["h100-80gb-efa"]
    workload = placement["workload"]
    pod = {
        "containers": [
            {"name": "train", "image": "train:1", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
        ],
        "tolerations": workload["tolerations"],
        "affinity": workload["affinity"],
    }

    fitting = [f.pool for f in fits(pod, node_templates(plan)) if f.fits]
    node_pools = [p.inputs for p in plan.of_type("kubernetes:karpenter.sh/v1:NodePool")]

    assert placement["pools"] == ["h100-block", "h100-od"]
    assert fitting == ["h100-block", "h100-od"]
    # Karpenter tries the NodePools a pod fits by weight (`OrderByWeight`, kubernetes-sigs/
    # karpenter pkg/utils/nodepool/nodepool.go at v1.14.1): the block's 40 before on-demand's 20.
    assert next(n for n in order_by_weight(node_pools) if n in fitting) == "h100-block"

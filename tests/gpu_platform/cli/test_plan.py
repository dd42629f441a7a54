"""The offline plan command, as a user runs it: `python -m gpu_platform.cli plan <stack>`."""

import io
import json
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.cli.plan import (
    EXIT_CONFIG_ERROR,
    plan_as_json,
    print_node_subnets,
    print_own_autoscaler,
)
from gpu_platform.offline import program as offline
from gpu_platform.offline.stand_ins import aws as stand_in
from tests.repository import POLICY_PACK


@pytest.fixture(scope="module")
def stack_files_plans():
    """The command's results for the stack files as they are, by command line: the tests that
    only read what `plan dev` prints share one run of it."""
    return {}


@pytest.fixture
def invoke(request, stack_files_plans):
    runner = CliRunner()
    # A test that makes a stack file read otherwise runs the command for itself.
    shared = "stack_file_says" not in request.fixturenames

    def run(*args: str):
        if shared and args in stack_files_plans:
            return stack_files_plans[args]
        # Wide enough that the tree does not wrap resource names.
        result = runner.invoke(app, ["plan", *args], env={"COLUMNS": "300"})
        if shared:
            stack_files_plans[args] = result
        return result

    return run


@pytest.fixture
def stack_file_says(monkeypatch):
    """Make the dev stack file read as the given config."""

    def replace(config):
        monkeypatch.setattr(offline, "stack_config", lambda stack, project=None: config)

    return replace


def test_plan_prints_every_resource_under_the_stack(invoke, dev_plan) -> None:
    result = invoke("dev")

    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"stack dev: {len(dev_plan.resources)} resources")
    for resource in dev_plan.resources:
        assert f"{resource.type} {resource.name}" in result.output


def test_plan_shows_how_long_a_node_groups_update_may_take(invoke) -> None:
    result = invoke("dev")

    assert "aws:eks/nodeGroup:NodeGroup t4-shared-nodes (ignores changes to" in result.output
    assert "update within 135m" in result.output


def test_plan_as_json_lists_resources_with_their_inputs(invoke, dev_plan) -> None:
    result = invoke("dev", "--json")

    document = json.loads(result.output)
    assert sorted(r["urn"] for r in document["resources"]) == sorted(
        r.urn for r in dev_plan.resources
    )
    assert all("inputs" in r for r in document["resources"])
    (group,) = [r for r in document["resources"] if r["name"] == "t4-shared-nodes"]
    assert group["customTimeouts"] == {"update": "135m"}


def test_plan_shows_the_policy_packs_verdicts(invoke) -> None:
    result = invoke("dev")

    assert f"Policy pack ({POLICY_PACK}): 0 mandatory" in result.output


def test_plan_shows_what_each_karpenter_nodepool_may_launch(invoke) -> None:
    output = invoke("karpenter-dev").output

    # t4-spot: at most 3 nodes of one T4 (and 4 vCPUs) each, on spot only.
    assert 'spec.limits = {"cpu": "12", "nodes": "3", "nvidia.com/gpu": "3"}' in output
    assert (
        'spec.template.spec.requirements[2] = {"key": "karpenter.sh/capacity-type", "operator": '
        '"In", "values": ["spot"]}'
    ) in output
    assert 'spec.amiSelectorTerms = [{"alias": "al2023@v20260714"}]' in output


def test_plan_shows_a_tenants_gpu_caps_before_the_slices_it_holds_at_0(invoke) -> None:
    output = invoke("dev").output

    # ml-sandbox may hold 8 replicas, and none of the 32 MIG slices of the GPUs the platform
    # knows: 26 uniform profiles (NVIDIA's MIG user guide, "Supported MIG Profiles") and 6 with
    # media engines (gpu-operator v26.7.0 assets/state-mig-manager/0400_configmap.yaml); nor,
    # on dev's Kubernetes 1.35, any device of NVIDIA's three DRA classes (gpu.nvidia.com,
    # mig.nvidia.com, vfio.gpu.nvidia.com).
    assert "spec.hard = requests.nvidia.com/gpu: 8; 35 more at 0" in output


def test_plan_shows_secret_outputs_as_secret(invoke) -> None:
    assert "kubeconfig: [secret]" in invoke("dev").output


def test_plan_masks_secret_inputs(invoke) -> None:
    output = invoke("dev").output

    assert "kubeconfig = [secret]" in output and "certificate-authority-data" not in output


def test_plan_as_json_masks_secret_inputs(invoke) -> None:
    document = json.loads(invoke("dev", "--json").output)

    (provider,) = [r for r in document["resources"] if r["type"] == "pulumi:providers:kubernetes"]
    assert provider["inputs"]["kubeconfig"] == "[secret]"


def test_plan_as_json_hides_secret_outputs() -> None:
    plan = offline.Plan(
        stack="dev",
        outputs={"kubeconfig": "apiVersion: v1"},
        secret_outputs=frozenset({"kubeconfig"}),
    )

    assert plan_as_json(plan)["outputs"] == {"kubeconfig": "[secret]"}


NODE_SUBNETS = {
    "used": [
        {
            "id": "subnet-0aaa0000aaaa0000a",
            "zone": "us-east-1a",
            "why": "private: route table rtb-0aaa0000aaaa0000a (the VPC's main) sends 0.0.0.0/0 to"
            " nat-0aaa0000aaaa0000a",
        },
        {
            "id": "subnet-0bbb0000bbbb0000b",
            "zone": "us-east-1b",
            "why": "private: route table rtb-0bbb0000bbbb0000b sends ::/0 to"
            " eigw-0bbb0000bbbb0000b",
        },
    ],
    "leftOut": [
        {
            "id": "subnet-0ccc0000cccc0000c",
            "zone": "us-east-1a",
            "why": "public: route table rtb-0ccc0000cccc0000c sends 0.0.0.0/0 to"
            " igw-0ccc0000cccc0000c",
        }
    ],
}


def printed_node_subnets(plan: offline.Plan) -> list[str]:
    printed = io.StringIO()
    print_node_subnets(plan, Console(file=printed, width=300))
    return printed.getvalue().splitlines()


def test_plan_shows_the_subnets_gpu_nodes_use_then_those_left_out_with_why() -> None:
    plan = offline.Plan(stack="dev", outputs={"nodeSubnets": NODE_SUBNETS})

    assert printed_node_subnets(plan) == [
        "",
        "GPU node subnets",
        "  used subnet-0aaa0000aaaa0000a (us-east-1a): private: route table rtb-0aaa0000aaaa0000a"
        " (the VPC's main) sends 0.0.0.0/0 to nat-0aaa0000aaaa0000a",
        "  used subnet-0bbb0000bbbb0000b (us-east-1b): private: route table rtb-0bbb0000bbbb0000b"
        " sends ::/0 to eigw-0bbb0000bbbb0000b",
        "  left out subnet-0ccc0000cccc0000c (us-east-1a): public: route table"
        " rtb-0ccc0000cccc0000c sends 0.0.0.0/0 to igw-0ccc0000cccc0000c",
    ]


def test_plan_shows_what_a_clusters_own_autoscaler_must_be_given() -> None:
    own = {
        "flags": ["--balance-similar-node-groups=true", "--expander=priority,least-waste"],
        "priorityConfigMap": {
            "name": "cluster-autoscaler-priority-expander",
            "key": "priorities",
            "data": "50:\n  - '^(?:$|[^e])'\n10:\n  - '^eks-t4-'\n",
        },
    }
    printed = io.StringIO()

    print_own_autoscaler(
        offline.Plan(stack="dev", outputs={"ownAutoscaler": own}), Console(file=printed, width=300)
    )

    # The ConfigMap the priority expander reads in the autoscaler's `--namespace`
    # (expander/priority/priority.go and expander/factory/expander_factory.go, 1.35.2).
    assert printed.getvalue().splitlines() == [
        "",
        "Settings for the cluster's own autoscaler",
        "  Add to its container's arguments:",
        "    --balance-similar-node-groups=true",
        "    --expander=priority,least-waste",
        "  Create ConfigMap cluster-autoscaler-priority-expander in the namespace of its"
        " --namespace flag (kube-system unless set), key priorities:",
        "    50:",
        "      - '^(?:$|[^e])'",
        "    10:",
        "      - '^eks-t4-'",
    ]


def test_plan_shows_secret_node_subnets_as_secret() -> None:
    plan = offline.Plan(
        stack="dev",
        outputs={"nodeSubnets": NODE_SUBNETS},
        secret_outputs=frozenset({"nodeSubnets"}),
    )

    assert printed_node_subnets(plan) == ["", "GPU node subnets", "  [secret]"]


def test_the_dev_plan_leaves_the_public_subnet_out_saying_why(invoke) -> None:
    # The stand-in cluster's public subnet, in us-east-1a, routes to the internet gateway.
    public = next(s for s, (_, public) in stand_in.cluster_subnets("us-east-1").items() if public)
    (table,) = [
        t
        for t in stand_in.route_tables("us-east-1")
        if [a["subnetId"] for a in t["associations"]] == [public]
    ]

    output = invoke("dev").output

    assert (
        f"  left out {public} (us-east-1a): public: route table {table['routeTableId']} sends"
        f" 0.0.0.0/0 to {table['routes'][0]['gatewayId']}"
    ) in output.splitlines()


def test_config_error_exits_2_with_the_problems(invoke, dev_config, stack_file_says) -> None:
    dev_config["gpu-platform:pools"][0]["max"] = 0
    stack_file_says(dev_config)

    result = invoke("dev")

    assert result.exit_code == EXIT_CONFIG_ERROR
    assert "gpu-platform:pools[0].max: got 0" in result.output


def test_unknown_stack_exits_2_listing_the_stack_files(invoke) -> None:
    result = invoke("nope")

    assert result.exit_code == EXIT_CONFIG_ERROR
    assert "Pulumi.nope.yaml" in result.output
    stacks = "auto-dev, dev, dra-dev, eks-new, gke-dev, gke-new, karpenter-dev, prod"
    assert f"the stacks there: {stacks}\n" in result.output


def test_config_text_is_printed_as_written_never_as_markup_or_emoji(
    invoke, stack_file_says, dev_config
) -> None:
    dev_config["gpu-platform:cloud"] = "azure"
    dev_config["gpu-platform:pools"][0]["name"] = "[/red]"
    stack_file_says(dev_config)

    result = invoke("dev")

    assert result.exit_code == EXIT_CONFIG_ERROR
    assert "gpu-platform:cloud: got" in result.output
    assert '"[/red]"' in result.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--policy-config", "/"], "no policy config file /"),
        (["--policy-pack", "/nonexistent-pack"], "no policy pack at /nonexistent-pack"),
    ],
    ids=["config is a folder", "no such pack"],
)
def test_a_policy_option_naming_the_wrong_thing_exits_2(invoke, args, words) -> None:
    result = invoke("dev", *args)

    assert result.exit_code == EXIT_CONFIG_ERROR
    assert words in result.output


def test_plan_shows_each_gke_ubuntu_pools_own_driver(invoke, gke_config, stack_file_says) -> None:
    gke_config["gpu-platform:cluster"]["nodeImage"] = "ubuntu"
    pool = {**gke_config["gpu-platform:pools"][0], "sharing": {"mode": "exclusive"}}
    canary = {**pool, "name": "l4-canary", "canaryOf": pool["name"]}
    gke_config["gpu-platform:pools"] = [pool, {**canary, "gcp": {"driverVersion": "610.43.02"}}]
    stack_file_says(gke_config)

    result = invoke("dev")

    assert result.exit_code == 0, result.output
    assert (
        "  l4-shared: NVIDIA driver 595.91.07 (CUDA 13.2), pinned by the GPU Operator at"
        " 595.91.07\n"
    ) in result.output
    assert (
        "  l4-canary: NVIDIA driver 610.43.02 (CUDA 13.3), pinned by the GPU Operator at"
        " 610.43.02; canary of l4-shared, ahead of it (the GPU Operator at 595.91.07): promote"
        " by giving l4-shared the canary's version"
    ) in result.output
    assert "kubernetes:nvidia.com/v1alpha1:NVIDIADriver gpu-operator-driver-l4-canary" in (
        result.output
    )
    # GKE's published balanced-profile timing ("Troubleshoot cluster autoscaler not scaling
    # down", cloud.google.com/kubernetes-engine/docs/troubleshooting/
    # cluster-autoscaler-scale-down): a 10-second check, 10 minutes, the check that removes it.
    assert "    idle after its last pod (gke): 10m20s\n" in result.output
    assert "over 10 minutes by GKE's published timing" in result.output


def test_plan_shows_an_auto_mode_pools_driver_is_its_node_images(invoke) -> None:
    result = invoke("auto-dev")

    assert result.exit_code == 0, result.output
    assert "  l40s: NVIDIA driver not pinned: the node image's own, unknown to the plan\n" in (
        result.output
    )


def shown_inputs(output: str, resource: str) -> list[str]:
    """The `key = value` lines the plan's tree shows under a resource (`<type> <name>`)."""
    lines = output.splitlines()
    (start,) = [i for i, line in enumerate(lines) if f"── {resource}" in line]
    column = lines[start].index(resource)
    shown = []
    for line in lines[start + 1 :]:
        if not line[column:].startswith(("├── ", "└── ")):
            break
        shown.append(line[column + 4 :])
    return shown


def test_plan_shows_what_driver_each_nvidiadriver_installs_and_on_which_nodes(
    invoke, gke_config, stack_file_says
) -> None:
    gke_config["gpu-platform:cluster"]["nodeImage"] = "ubuntu"
    pool = {**gke_config["gpu-platform:pools"][0], "sharing": {"mode": "exclusive"}}
    gke_config["gpu-platform:pools"] = [{**pool, "gcp": {"driverVersion": "610.43.02"}}]
    stack_file_says(gke_config)

    output = invoke("dev").output

    assert shown_inputs(
        output, "kubernetes:nvidia.com/v1alpha1:NVIDIADriver gpu-operator-driver-l4-shared"
    ) == [
        "metadata.name = l4-shared",
        "spec.version = 610.43.02",
        'spec.nodeSelector = {"gpu-platform.io/pool": "l4-shared"}',
    ]


GKE_NODE_POOL = "gcp:container/nodePool:NodePool l4-shared"
CAPACITY_INPUTS = (
    "nodeConfig.reservationAffinity",
    "nodeConfig.flexStart",
    "nodeConfig.maxRunDuration",
    "queuedProvisioning",
    "management",
)


def capacity_inputs(output: str) -> dict[str, Any]:
    """The GKE node pool's capacity inputs the plan shows, their values read back as JSON."""
    shown = dict(line.split(" = ", 1) for line in shown_inputs(output, GKE_NODE_POOL))
    return {key: _parsed(shown[key]) for key in CAPACITY_INPUTS if key in shown}


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def test_plan_shows_a_flex_start_pools_capacity_settings(
    invoke, gke_config, stack_file_says
) -> None:
    gke_config["gpu-platform:pools"][0].update(
        capacity="on-demand", gcp={"flexStart": True, "maxRunHours": 24}
    )
    stack_file_says(gke_config)

    output = invoke("dev").output

    assert capacity_inputs(output) == {
        "nodeConfig.reservationAffinity": {"consumeReservationType": "NO_RESERVATION"},
        "nodeConfig.flexStart": True,
        "nodeConfig.maxRunDuration": "86400s",
        "management": {"autoRepair": False, "autoUpgrade": True},
    }


def test_plan_shows_a_queued_pools_capacity_settings(invoke, gke_config, stack_file_says) -> None:
    gke_config["gpu-platform:pools"][0].update(
        capacity="on-demand", gcp={"queuedProvisioning": True}
    )
    stack_file_says(gke_config)

    output = invoke("dev").output

    assert capacity_inputs(output) == {
        "nodeConfig.reservationAffinity": {"consumeReservationType": "NO_RESERVATION"},
        "queuedProvisioning": {"enabled": True},
        "management": {"autoRepair": False, "autoUpgrade": True},
    }


def test_plan_shows_the_specific_reservation_a_pool_consumes(
    invoke, gke_config, stack_file_says
) -> None:
    gke_config["gpu-platform:pools"][0].update(
        capacity="on-demand",
        zones=["us-central1-a"],
        gcp={"reservation": "specific", "reservationName": "l4-ml-dev"},
    )
    stack_file_says(gke_config)

    output = invoke("dev").output

    assert capacity_inputs(output)["nodeConfig.reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["l4-ml-dev"],
    }


def test_plan_shows_no_capacity_settings_a_pool_leaves_unset(
    invoke, gke_config, stack_file_says
) -> None:
    stack_file_says(gke_config)

    output = invoke("dev").output

    assert capacity_inputs(output) == {"management": {"autoRepair": True, "autoUpgrade": True}}


def test_plan_shows_each_pools_idle_billing_and_warns_of_a_long_one(
    invoke, dev_config, stack_file_says
) -> None:
    dev_config["gpu-platform:autoscaler"] = {"gpuNodeIdleMinutes": 30}
    stack_file_says(dev_config)

    result = invoke("dev")

    assert result.exit_code == 0, result.output
    # 30 unneeded minutes, two of the autoscaler's 10-second loops (DefaultScanInterval,
    # cluster-autoscaler/config/const.go) and the 5 seconds from the deletion taint to the
    # deletion (--node-delete-delay-after-taint, config/flags/flags.go; cluster-autoscaler-1.33.6
    # to 1.36.1), under the pool's driver line; then the cluster's cooldowns, which hold it past
    # that: --scale-down-delay-after-add at upstream's 10 minutes and
    # --scale-down-delay-after-failure at its 3 (DefaultScaleDownDelayAfterFailure, const.go),
    # both checked for the whole cluster in isScaleDownInCooldown (core/static_autoscaler.go).
    lines = result.output.splitlines()
    driver = next(i for i, line in enumerate(lines) if line.startswith("  t4-shared: NVIDIA"))
    assert lines[driver + 1] == "    idle after its last pod (cluster-autoscaler): 30m25s"
    assert lines[driver + 6].startswith("    or later, while the whole cluster cools down")
    assert lines[driver + 7].startswith(
        "      --scale-down-delay-after-add: until 10m after the cluster's last scale-up,"
        " of any node group ("
    )
    assert lines[driver + 8].startswith(
        "      --scale-down-delay-after-failure: until 3m after the cluster's last failed"
        " scale-down ("
    )
    assert "    billed before its first pod, not after its last: 17m: a new node's validation" in (
        result.output
    )
    assert (
        "warning: pool t4-shared (spot): an empty GPU node bills for 30m25s after its last pod"
        " ends, over the 10 minutes the defaults keep to; set by autoscaler.gpuNodeIdleMinutes"
    ) in " ".join(result.output.split())

"""`gpu-platform fit`: which of a stack's pools each pod in a YAML file fits, with exit codes
a pipeline can act on."""

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpu_platform.cli.app import app
from gpu_platform.offline import fit as offline_fit
from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT
from tests.shared_plans import shared_plan

SMOKE_TEST_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "smoke"},
    "spec": {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"gpu-platform.io/pool": "t4-shared"},
        "containers": [
            {"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
        ],
    },
}
WEB_DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
}


def run_fit(tmp_path: Path, *documents: dict, stack: str = "dev") -> tuple[int, str]:
    pod_file = tmp_path / "pods.yaml"
    pod_file.write_text(yaml.safe_dump_all(documents))
    # Wide enough for a row of the templates' table whatever COLUMNS the run has.
    result = CliRunner().invoke(
        app, ["fit", stack, str(pod_file)], terminal_width=200, env={"COLUMNS": "1000"}
    )
    return result.exit_code, result.output


def test_gke_pools_are_judged_from_their_node_pools(tmp_path: Path) -> None:
    pod = copy.deepcopy(SMOKE_TEST_POD)
    pod["spec"]["nodeSelector"] = {"gpu-platform.io/pool": "l4-shared"}

    code, output = run_fit(tmp_path, pod, stack="gke-dev")

    assert code == 0 and "l4-shared" in output


def test_a_stack_that_creates_its_cluster_is_judged_from_its_planned_subnets_and_version(
    tmp_path: Path,
) -> None:
    # Nothing is looked up for a cluster the stack creates: its node groups' zones come from the
    # subnets it plans, and the template's version from the cluster it plans.
    pod = copy.deepcopy(SMOKE_TEST_POD)
    pod["spec"]["nodeSelector"] = {
        "gpu-platform.io/pool": "l4",
        "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
    }

    code, output = run_fit(tmp_path, pod, stack="eks-new")

    assert code == 0, output
    assert "│ l4   │ yes" in output


def test_a_pod_that_fits_a_pool_exits_0(tmp_path: Path) -> None:
    code, output = run_fit(tmp_path, SMOKE_TEST_POD)

    assert code == 0, output
    assert "Pod smoke" in output
    assert "t4-shared" in output
    assert "yes" in output


def test_a_workload_that_fits_no_pool_exits_1_and_says_why(tmp_path: Path) -> None:
    code, output = run_fit(tmp_path, SMOKE_TEST_POD, WEB_DEPLOYMENT)

    assert code == 1
    assert "Deployment web" in output
    # The table wraps the reason at the console's width.
    assert "TaintToleration: taint nvidia.com/gpu=present:NoSchedule" in output


def test_a_document_without_a_pod_spec_exits_2(tmp_path: Path) -> None:
    code, output = run_fit(tmp_path, {"kind": "Service", "metadata": {"name": "x"}, "spec": {}})

    assert code == 2
    assert "'Service' has no pod spec" in output


def pod_asking_for(gpus: Any) -> dict[str, Any]:
    pod = copy.deepcopy(SMOKE_TEST_POD)
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus
    return pod


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no Kubernetes objects in it"),
        ("- a\n- b\n", "document 1: a YAML list, not a Kubernetes object"),
        ("42\n", "document 1: a YAML number, not a Kubernetes object"),
        (yaml.safe_dump(pod_asking_for("1x")), "(Pod smoke): '1x' is not a Kubernetes quantity"),
        (yaml.safe_dump(pod_asking_for(-1)), "(Pod smoke): negative requests for nvidia.com/gpu"),
        ("kind: Deployment\nmetadata: {name: web}\nspec: {}\n", "(Deployment web): no pod spec"),
        ("kind: ConfigMap\nmetadata: {name: c}\n", "'ConfigMap' has no pod spec"),
        (
            "kind: Pod\nspec: [\n",
            "pods.yaml: not valid YAML: did not find expected node content (line 3, column 1)",
        ),
    ],
    ids=[
        "empty",
        "a list",
        "a number",
        "bad quantity",
        "negative",
        "no template",
        "not a workload",
        "bad YAML",
    ],
)
def test_a_bad_pod_file_exits_2_naming_the_document_without_a_traceback(
    tmp_path: Path, text: str, words: str
) -> None:
    pod_file = tmp_path / "pods.yaml"
    pod_file.write_text(text)

    result = CliRunner().invoke(app, ["fit", "dev", str(pod_file)], terminal_width=300)

    assert result.exit_code == 2, result.output
    assert words in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_karpenter_pools_are_judged_from_their_nodepools(tmp_path: Path) -> None:
    pod = copy.deepcopy(SMOKE_TEST_POD)
    pod["spec"]["nodeSelector"] = {
        "gpu-platform.io/pool": "l4-on-demand",
        "karpenter.k8s.aws/instance-gpu-name": "l4",
    }

    code, output = run_fit(tmp_path, pod, stack="karpenter-dev")

    assert code == 0, output
    assert "l4-on-demand" in output and "t4-spot" in output


def auto_mode_pod(cpu: str) -> dict[str, Any]:
    pod = copy.deepcopy(SMOKE_TEST_POD)
    # Auto Mode's label for the GPU (awsdocs/amazon-eks-user-guide
    # latest/ug/automode/create-node-pool.adoc, "EKS Auto Mode Supported Labels").
    pod["spec"]["nodeSelector"] = {
        "gpu-platform.io/pool": "l40s",
        "eks.amazonaws.com/instance-gpu-name": "l40s",
    }
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": cpu}
    return pod


def test_auto_mode_pools_are_judged_from_their_nodepools(tmp_path: Path) -> None:
    pod = auto_mode_pod("8")
    # A label of Auto Mode's table that fit's instance data does not hold.
    pod["spec"]["nodeSelector"]["eks.amazonaws.com/instance-hypervisor"] = "nitro"
    code, output = run_fit(tmp_path, pod, stack="auto-dev")

    assert code == 0, output
    assert "│ l40s        │ yes" in output
    # Auto Mode runs no vpc-cni, kube-proxy or EBS CSI DaemonSets: only the stack's own pods
    # are placed first (the node-feature-discovery worker's 5m and 64Mi, docs/fit.md).
    row = next(line for line in output.splitlines() if line.startswith("│ l40s") and "5m" in line)
    assert "node-feature-discovery worker, gpu-node-validator-l40s " in row
    assert "│ 5m cpu, 64Mi memory │" in row
    assert "aws-node" not in output and "kube-proxy" not in output
    # A g6e.4xlarge's 16 vCPUs hold 8 under any reservation: no capacity line.
    assert "cannot say it fits once" not in output
    assert (
        "Pod smoke: l40s: cannot say its nodes match the pod's"
        " eks.amazonaws.com/instance-hypervisor: fit's instance data does not hold those labels,"
        " so it does not judge them"
    ) in " ".join(output.split())


def test_a_pod_near_an_auto_mode_nodes_capacity_fits_it_by_capacity_only(tmp_path: Path) -> None:
    # A g6e.xlarge has 4 vCPUs (EC2); Karpenter v1.14.1 keeps back 6% of the first core, 1% of
    # the second and 0.5% of the third and fourth (aws/karpenter-provider-aws
    # pkg/providers/instancetype/types.go `kubeReservedResources`): 80m, so 3920m is assumed
    # allocatable. The node-feature-discovery worker placed first asks 5m.
    under, near = auto_mode_pod("3915m"), auto_mode_pod("3916m")
    for pod in (under, near):
        pod["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = "g6e.xlarge"
    under["metadata"]["name"], near["metadata"]["name"] = "under", "near"

    code, output = run_fit(tmp_path, under, near, stack="auto-dev")

    assert code == 0, output
    tables = output.split("Pod near")
    assert "│ l40s        │ yes" in tables[0] and "│ l40s        │ by capacity only" in tables[1]
    assert "Pod under: l40s: cannot say" not in output
    assert (
        "Pod near: l40s: cannot say it fits once EKS Auto Mode has reserved its share of the"
        " node's cpu: it fits the node's capacity, not what the node would offer under Karpenter"
        " v1.14.1's default kube-reserved and eviction thresholds (assumed: Auto Mode publishes"
        " no kube-reserved, eviction threshold or max-pods)"
    ) in " ".join(output.split())


def test_a_pod_beyond_an_auto_mode_nodes_capacity_fits_no_pool(tmp_path: Path) -> None:
    # The largest g6e, g6e.48xlarge, has 192 vCPUs (EC2's instance type data).
    code, output = run_fit(tmp_path, auto_mode_pod("193"), stack="auto-dev")

    assert code == 1, output
    assert "asks for 193 cpu; a node has 192" in output
    assert "its capacity, before what the provisioner reserves and does not publish" in output


def test_the_output_says_what_each_template_counts(tmp_path: Path) -> None:
    # prod's h100-training: dev's 295m and 214Mi (fit_cases.yaml) and the EFA device plugin
    # (10m, 20Mi) on the template first; the node validator's pod, there too, requests nothing.
    _, output = run_fit(tmp_path, SMOKE_TEST_POD, stack="prod")

    assert "What each pool's node template counts" in output
    row = next(line for line in output.splitlines() if "h100-training" in line)
    assert "305m cpu, 234Mi memory" in row
    assert "gpu-node-validator-h100-training" in row
    assert "EFA device plugin" in output
    assert "failure-domain.beta.kubernetes.io/zone" in output


def test_the_output_says_what_fit_assumed_of_an_existing_eks_cluster(tmp_path: Path) -> None:
    _, output = run_fit(tmp_path, SMOKE_TEST_POD, stack="dev")

    assert "the cluster is not the platform's, so fit assumes it runs vpc-cni" in output
    assert "not counted: DaemonSets installed outside this stack" in output


@pytest.mark.parametrize(
    ("stack", "said"),
    [
        ("gke-new", "the platform's cluster runs GKE Dataplane V2, so no kube-proxy is counted"),
        ("gke-dev", "its datapath unknown: fit counts kube-proxy's 100m CPU"),
    ],
)
def test_the_output_says_what_fit_assumed_of_a_gke_datapath(
    tmp_path: Path, stack: str, said: str
) -> None:
    pod = copy.deepcopy(SMOKE_TEST_POD)
    del pod["spec"]["nodeSelector"]

    _, output = run_fit(tmp_path, pod, stack=stack)

    assert said in " ".join(output.split())
    assert "GKE's own system DaemonSets" in " ".join(output.split())


def test_a_pod_claiming_gpus_through_dra_is_said_to_be_beyond_the_check(tmp_path: Path) -> None:
    pod = copy.deepcopy(SMOKE_TEST_POD)
    pod["metadata"]["name"] = "claims"
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-l4"}]
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}

    code, output = run_fit(tmp_path, pod, stack="dra-dev")

    assert code == 0, output
    assert (
        "Pod claims: cannot say where it fits: it claims devices through DRA"
        " (spec.resourceClaims), which fit cannot judge"
    ) in " ".join(output.split())


def test_a_pod_counting_gpus_fits_no_dra_pool(tmp_path: Path) -> None:
    # With the tolerations and pool of a DRA pool's placement, but nvidia.com/gpu in its limits,
    # which no DRA node advertises (docs/dra.md).
    pod = copy.deepcopy(SMOKE_TEST_POD)
    pod["metadata"]["name"] = "counts"
    pod["spec"]["nodeSelector"] = {"gpu-platform.io/pool": "l4"}
    pod["spec"]["tolerations"].append(
        {"key": "gpu-platform.io/allocation", "operator": "Exists", "effect": "NoSchedule"}
    )

    code, output = run_fit(tmp_path, pod, stack="dra-dev")

    assert code == 1, output
    assert "│ l4 │ no │ NodeResourcesFit: asks for 1 nvidia.com/gpu; a node has 0 │" in (
        " ".join(output.split())
    )


def test_a_pod_claiming_gpus_through_dra_fits_no_pool_of_a_stack_without_dra_pools(
    tmp_path: Path,
) -> None:
    pod = copy.deepcopy(SMOKE_TEST_POD)
    pod["metadata"]["name"] = "claims"
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-l4"}]
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}

    code, output = run_fit(tmp_path, pod)

    assert code == 1, output
    assert "cannot say where it fits" not in output
    assert "it claims devices through DRA (spec.resourceClaims), and the pool's GPUs are" in (
        " ".join(output.split())
    )


def test_a_pod_between_the_nvme_and_a_larger_node_class_size_fits_by_capacity_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # auto-dev with l40s's NodeClass at 500Gi, above a g6e.xlarge's 250 GB NVMe (EC2): AWS's
    # automode-learn-instances.adoc leaves open whether the drives or that volume hold pods' data.
    config = stack_config("auto-dev", PROJECT)
    config["gpu-platform:pools"][1]["diskSizeGib"] = 500
    monkeypatch.setattr(offline_fit, "program_plan", lambda *_: shared_plan("auto-dev", config))
    pod = auto_mode_pod("1")
    pod["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = "g6e.xlarge"
    pod["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "300Gi"

    code, output = run_fit(tmp_path, pod, stack="auto-dev")

    assert code == 0, output
    assert (
        "(assumed: Auto Mode publishes no kube-reserved, eviction threshold or max-pods; of"
        " ephemeral storage, where the NodeClass's ephemeralStorage.size is at least the"
        " instance's NVMe, the smaller of the two (AWS leaves open which holds pods' data))"
    ) in " ".join(output.split())

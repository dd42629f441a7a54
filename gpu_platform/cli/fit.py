"""Which of a stack's GPU pools a pod would land on, before anything is deployed.

Plans the stack offline (`gpu_platform.cli.offline`), builds each pool's node template as the
cluster autoscaler would see it at zero (from what the plan declares: an EKS node group's Auto
Scaling group hints and instance type), or Karpenter would (a NodePool's, one per instance type),
and checks every pod spec in a YAML file (Pods, Deployments,
Jobs, ...) against them. Exits 1 if some pod fits no pool, 2 for a bad stack or pod file.
"""

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from gpu_platform import yaml_documents
from gpu_platform.cli.cli import fail, plain_console, plan_or_fail
from gpu_platform.cli.offline import Plan, PlannedResource
from gpu_platform.eks.instance_types import Gpus, InstanceType, instance_type
from gpu_platform.fit import (
    NodeTemplate,
    PodSpec,
    eks_node_template,
    fits,
    gke_node_template,
    karpenter_node_templates,
    pod_requests,
    pod_spec_of,
)

_YAML_KINDS = {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}
EXIT_NO_FIT = 1
EXIT_BAD_INPUT = 2


def run(stack: str, pod_file: Path) -> None:
    """Show which GPU pools each pod in `pod_file` fits, and why not the others."""
    console = plain_console()
    try:
        specs = pods_in(pod_file)
    except ValueError as error:
        fail(str(error), EXIT_BAD_INPUT)
    plan = plan_or_fail(stack, EXIT_BAD_INPUT, EXIT_BAD_INPUT)
    templates = node_templates(plan)
    homeless = 0
    for title, spec in specs:
        table = Table(title=escape(title), title_justify="left")
        table.add_column("pool")
        table.add_column("fits")
        table.add_column("why not")
        results = fits(spec, templates)
        for result in results:
            table.add_row(
                escape(result.pool),
                "[green]yes[/green]" if result.fits else "[red]no[/red]",
                escape("\n".join(result.reasons)),
            )
        console.print(table)
        homeless += not any(r.fits for r in results)
    if homeless:
        raise typer.Exit(EXIT_NO_FIT)


def pods_in(pod_file: Path) -> list[tuple[str, PodSpec]]:
    """Each object's title and pod spec; a ValueError naming the file, the document and what is
    wrong where one is not a workload the check can read."""
    try:
        text = pod_file.read_text()
    except UnicodeDecodeError:
        raise ValueError(f"{pod_file}: not UTF-8 text, as YAML must be") from None
    except OSError as error:
        raise ValueError(f"cannot read the pod file {pod_file}: {error.strerror}") from None
    try:
        documents = [d for d in yaml_documents.load_all(text) if d is not None]
    except yaml.YAMLError as error:
        raise ValueError(f"{pod_file}: not valid YAML: {yaml_problem(error)}") from None
    if not documents:
        raise ValueError(f"{pod_file}: no Kubernetes objects in it")
    specs = []
    for number, document in enumerate(documents, start=1):
        where = f"{pod_file}, document {number}"
        if not isinstance(document, Mapping):
            kind = _YAML_KINDS.get(type(document), type(document).__name__)
            raise ValueError(f"{where}: a YAML {kind}, not a Kubernetes object")
        title = _title(document)
        where += f" ({title})"
        try:
            spec = pod_spec_of(document)
            requests = pod_requests(spec)
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{where}: no pod spec where its kind has one ({error})") from None
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        negative = sorted(name for name, amount in requests.items() if amount < 0)
        if negative:
            raise ValueError(f"{where}: negative requests for {', '.join(negative)}")
        specs.append((title, spec))
    return specs


def yaml_problem(error: yaml.YAMLError) -> str:
    """PyYAML's complaint, placed by line and column of the file (its own message names the
    text it parsed, not the file)."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(error)


def node_templates(plan: Plan) -> list[NodeTemplate]:
    """Every GPU pool's node templates, from what the plan declares for it, in the order the
    program declares the pools."""
    looked_up = [i for i in plan.invokes if i.token == "aws:ec2/getInstanceType:getInstanceType"]
    instance_types = {
        i.args["instanceType"]: _instance_type(i.args["instanceType"], i.result) for i in looked_up
    }
    templates = []
    for pool in plan.resources:
        if pool.type == "gpu-platform:eks:GpuNodeGroup":
            templates.append(_node_group_template(plan, pool, instance_types))
        elif pool.type == "gpu-platform:eks:KarpenterGpuNodePool":
            # One cluster, so one region: every lookup's.
            (region,) = {i.args["region"] for i in looked_up}
            templates += _node_pool_templates(plan, pool, instance_types, region)
    templates += [
        replace(gke_node_template(pool.inputs), secret_labels="nodeConfig" in pool.secret_inputs)
        for pool in plan.of_type("gcp:container/nodePool:NodePool")
    ]
    return templates


def _node_group_template(
    plan: Plan, group: PlannedResource, instance_types: Mapping[str, InstanceType]
) -> NodeTemplate:
    children = plan.children_of(group)
    # A pool with a node group per zone has one template per group, the same but for the zone,
    # which `fit` does not read: the first stands for them all.
    node_group = next(c for c in children if c.type == "aws:eks/nodeGroup:NodeGroup")
    tags = {
        c.inputs["tag"]["key"]: c.inputs["tag"]["value"]
        for c in children
        if c.type == "aws:autoscaling/tag:Tag"
    }
    first = instance_types[node_group.inputs["instanceTypes"][0]]
    template = eks_node_template(tags, first, node_group.inputs["region"])
    return replace(template, secret_labels="labels" in node_group.secret_inputs)


def _node_pool_templates(
    plan: Plan,
    pool: PlannedResource,
    instance_types: Mapping[str, InstanceType],
    region: str,
) -> list[NodeTemplate]:
    children = {c.type: c for c in plan.children_of(pool)}
    node_pool = children["kubernetes:karpenter.sh/v1:NodePool"]
    node_class = children["kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"]
    templates = karpenter_node_templates(
        node_pool.inputs, node_class.inputs, instance_types, region
    )
    # With secret labels Pulumi holds the NodePool's whole `spec` secret.
    return [replace(t, secret_labels="spec" in node_pool.secret_inputs) for t in templates]


def _instance_type(name: str, described: Mapping[str, Any]) -> InstanceType:
    """An instance type from the plan's record of `aws:ec2/getInstanceType`."""
    return instance_type(
        name,
        int(described["defaultVcpus"]),
        int(described["memorySize"]),
        described.get("supportedArchitectures") or [],
        [
            Gpus(g["manufacturer"], g["name"], int(g["count"]), int(g["memorySize"]))
            for g in described.get("gpuses") or []
        ],
        # As `look_up_instance_type` reads them.
        sum(
            int(d["count"]) * int(d["size"])
            for d in described.get("instanceDisks") or []
            if d["type"] == "ssd"
        ),
        int(described.get("efaMaximumInterfaces") or 0) if described.get("efaSupported") else 0,
    )


def _title(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata") or {}
    return f"{document.get('kind')} {metadata.get('name', '(unnamed)')}"

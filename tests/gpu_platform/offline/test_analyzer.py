"""The analyzer harness: it starts a pack as the engine does, hands each policy what the engine
would (properties, provider, options, parent, dependencies), reconciles configuration as the
engine does, and never leaves a pack process behind."""

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.offline.analyzer import (
    PolicyConfigError,
    PolicyInfo,
    PolicyPack,
    PolicyPackError,
    analyze_plan,
    reconcile_config,
)
from gpu_platform.offline.program import PlannedResource

PREFIX = "urn:pulumi:dev::gpu-platform::"

# A pack whose policies report what they were given, so the tests can see what the harness sent.
PROBE_PACK = """
import json
from collections.abc import Mapping, Sequence

import pulumi
from pulumi_policy import (
    PolicyPack,
    ResourceValidationPolicy,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError


def plain(value):
    if isinstance(value, Mapping):
        return {key: plain(value[key]) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(item) for item in value]
    return value


def echo(args, report_violation):
    if args.resource_type != "test:index:Probe":
        return
    if args.props.get("crash"):
        raise RuntimeError("probe asked to crash")
    for index in range(int(args.props.get("noise", 0))):
        pulumi.log.info(f"note {index} " + "x" * 1000)
    provider = args.provider
    report_violation(json.dumps({
        "name": args.name,
        "props": plain(args.props),
        "parent": args.opts.parent,
        "protect": args.opts.protect,
        "ignoreChanges": list(args.opts.ignore_changes),
        "provider": None if provider is None else [
            provider.resource_type, provider.urn, provider.name, plain(provider.props)
        ],
    }))


def echo_stack(args, report_violation):
    for resource in args.resources:
        report_violation(json.dumps({
            "parent": resource.parent.urn if resource.parent else None,
            "dependencies": [d.urn for d in resource.dependencies],
            "propertyDependencies": {
                k: [d.urn for d in v] for k, v in resource.property_dependencies.items()
            },
        }), resource.urn)


def echo_outputs(args, report_violation):
    for resource in args.resources:
        shown = {}
        for key in resource.props:
            try:
                shown[key] = plain(resource.props[key])
            except UnknownValueError:
                shown[key] = "(unknown)"
        report_violation(json.dumps(shown), resource.urn)


if __name__ == "__main__":
    PolicyPack("probe", [
        ResourceValidationPolicy("echo", "Reports what it was given.", echo),
        StackValidationPolicy("echo-stack", "Reports the stack's links.", echo_stack),
        StackValidationPolicy("echo-outputs", "Reports the stack's outputs.", echo_outputs),
    ])
"""


def write_pack(directory: Path, main: str) -> Path:
    directory.mkdir()
    (directory / "PulumiPolicy.yaml").write_text("runtime: python\nversion: 0.0.1\n")
    (directory / "__main__.py").write_text(textwrap.dedent(main))
    return directory


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyPack]:
    pack_dir = write_pack(tmp_path_factory.mktemp("packs") / "probe", PROBE_PACK)
    with PolicyPack(pack_dir) as pack:
        pack.configure({"all": "mandatory"})
        yield pack


def planned(type_: str, name: str, **fields: Any) -> PlannedResource:
    defaults: dict[str, Any] = {
        "urn": f"{PREFIX}{type_}::{name}",
        "type": type_,
        "name": name,
        "inputs": {},
        "parent": None,
        "custom": True,
        "provider": None,
        "dependencies": (),
        "property_dependencies": {},
        "protect": False,
        "ignore_changes": (),
    }
    return PlannedResource(**{**defaults, **fields})


def reported(pack: PolicyPack, *resources: PlannedResource, policy: str = "echo") -> list[Any]:
    return [json.loads(v.message) for v in pack.analyze(resources) if v.policy_name == policy]


def test_a_policy_sees_the_inputs_options_and_provider_the_engine_would_send(
    probe: PolicyPack,
) -> None:
    provider = planned("pulumi:providers:kubernetes", "cluster", inputs={"namespace": "ml"})
    probe_resource = planned(
        "test:index:Probe",
        "probe",
        inputs={"count": 2, "nested": {"list": ["a", True, None]}},
        parent=f"{PREFIX}gpu-platform:kubernetes:Thing::parent",
        provider=f"{provider.urn}::provider-id",
        protect=True,
        ignore_changes=("count",),
    )

    (seen,) = reported(probe, provider, probe_resource)

    assert seen == {
        "name": "probe",
        "props": {"count": 2.0, "nested": {"list": ["a", True, None]}},
        "parent": f"{PREFIX}gpu-platform:kubernetes:Thing::parent",
        "protect": True,
        "ignoreChanges": ["count"],
        "provider": [
            "pulumi:providers:kubernetes",
            provider.urn,
            "cluster",
            {"namespace": "ml"},
        ],
    }


def test_a_default_provider_is_described_by_its_urn(probe: PolicyPack) -> None:
    default = f"{PREFIX}pulumi:providers:aws::default_7_51_0"

    (seen,) = reported(probe, planned("test:index:Probe", "p", provider=f"{default}::id-1"))

    assert seen["provider"] == ["pulumi:providers:aws", default, "default_7_51_0", {}]


def test_a_stack_policy_sees_parents_and_dependencies(probe: PolicyPack) -> None:
    parent = planned("gpu-platform:eks:GpuNodeGroup", "pool", custom=False)
    template = planned("aws:ec2/launchTemplate:LaunchTemplate", "lt", parent=parent.urn)
    group = planned(
        "aws:eks/nodeGroup:NodeGroup",
        "nodes",
        parent=parent.urn,
        dependencies=(template.urn,),
        property_dependencies={"launchTemplate": (template.urn,), "tags": ()},
    )

    seen = reported(probe, parent, template, group, policy="echo-stack")

    assert seen[2] == {
        "parent": parent.urn,
        "dependencies": [template.urn],
        "propertyDependencies": {"launchTemplate": [template.urn]},
    }


def node_group_to_create() -> PlannedResource:
    return planned(
        "aws:eks/nodeGroup:NodeGroup",
        "nodes",
        inputs={"clusterName": "ml-dev", "nodeGroupNamePrefix": "l4-"},
        computed_outputs={"arn": "arn:aws:eks:us-east-1:123456789012:nodegroup/ml-dev/l4-1"},
    )


def test_at_a_preview_the_stack_policies_see_computed_outputs_not_known_yet(
    probe: PolicyPack,
) -> None:
    # pulumi step_generator.go: "AnalyzeStack is called on the final outputs", which a preview
    # of a new resource does not know.
    (seen,) = reported(probe, node_group_to_create(), policy="echo-outputs")

    assert seen == {"clusterName": "ml-dev", "nodeGroupNamePrefix": "l4-", "arn": "(unknown)"}


def test_at_an_update_the_stack_policies_see_computed_outputs(tmp_path: Path) -> None:
    pack_dir = write_pack(tmp_path / "probe", PROBE_PACK)
    with PolicyPack(pack_dir, preview=False) as pack:
        pack.configure({"all": "mandatory"})
        (seen,) = reported(pack, node_group_to_create(), policy="echo-outputs")

    assert seen["arn"] == "arn:aws:eks:us-east-1:123456789012:nodegroup/ml-dev/l4-1"


def test_the_packs_log_is_collected_however_much_it_writes(probe: PolicyPack) -> None:
    # Far more than a pipe holds: a harness that stopped reading would hang here.
    start = len(probe.notes)

    reported(probe, planned("test:index:Probe", "noisy", inputs={"noise": 300}))

    notes = probe.notes[start:]
    assert len(notes) == 300 and notes[-1].startswith("note 299 x")


def test_a_policy_that_crashes_fails_the_analysis_with_its_traceback(probe: PolicyPack) -> None:
    with pytest.raises(PolicyPackError, match="failed AnalyzeRequest") as failure:
        probe.analyze([planned("test:index:Probe", "bad", inputs={"crash": True})])

    assert "probe asked to crash" in str(failure.value)
    assert probe.running


def test_a_pack_that_cannot_start_is_reported_with_its_output(tmp_path: Path) -> None:
    broken = write_pack(tmp_path / "broken", "raise SystemExit('the pack is broken')\n")

    with pytest.raises(PolicyPackError, match="exited before printing its port") as failure:
        PolicyPack(broken)

    assert "the pack is broken" in str(failure.value)


def test_the_pack_process_ends_with_the_block(tmp_path: Path) -> None:
    pack_dir = write_pack(tmp_path / "probe", PROBE_PACK)

    with PolicyPack(pack_dir) as pack:
        assert pack.running

    assert not pack.running


def test_analyze_plan_runs_the_projects_pack_configured() -> None:
    namespace = planned(
        "kubernetes:core/v1:Namespace",
        "team",
        inputs={"metadata": {"name": "team", "labels": {}}},
    )

    verdicts = analyze_plan([namespace], config={"namespace-pod-security": "advisory"})

    assert len(verdicts) == 6
    assert {(v.policy_name, v.enforcement_level, v.urn) for v in verdicts} == {
        ("namespace-pod-security", "advisory", namespace.urn)
    }
    assert not any(v.mandatory for v in verdicts)


def test_a_disabled_policy_is_not_run() -> None:
    namespace = planned("kubernetes:core/v1:Namespace", "team", inputs={"metadata": {}})

    assert analyze_plan([namespace], config={"namespace-pod-security": "disabled"}) == []


# --- configuration, as the engine reconciles it ------------------------------------------------

POLICIES = [
    PolicyInfo("a", "A.", "mandatory", {"limit": {"type": "integer", "default": 8}}, False),
    PolicyInfo("b", "B.", "advisory", {}, True),
]


def test_defaults_come_from_each_policys_schema() -> None:
    assert reconcile_config(POLICIES, None) == {
        "a": ("mandatory", {"limit": 8}),
        "b": ("advisory", {}),
    }


def test_all_sets_every_level_and_a_policys_own_entry_wins() -> None:
    config = {"all": "advisory", "a": {"enforcementLevel": "remediate", "limit": 4}}

    assert reconcile_config(POLICIES, config) == {
        "a": ("remediate", {"limit": 4}),
        "b": ("advisory", {}),
    }


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"c": "mandatory"}, "c: no such policy; the pack has a, b"),
        (
            {"a": {"limits": 4}},
            "a: Additional properties are not allowed ('limits' was unexpected)",
        ),
        ({"a": {"limit": "four"}}, "a.limit: 'four' is not of type 'integer'"),
        ({"b": "strict"}, 'b: enforcement level "strict" is not one of advisory, mandatory'),
    ],
)
def test_bad_configuration_is_refused_naming_the_key(config: Any, problem: str) -> None:
    with pytest.raises(PolicyConfigError) as error:
        reconcile_config(POLICIES, config)

    assert error.value.problems[0].startswith(problem)


def test_a_shared_setting_given_as_its_default_is_one_value() -> None:
    # The pack's schema reaches the plan over the plugin protocol, whose Struct holds numbers as
    # doubles (google/protobuf struct.proto, number_value): a default of 8 arrives as 8.0.
    limit = {"limit": {"type": "integer", "default": 8.0}}
    policies = [
        PolicyInfo("x", "X.", "mandatory", limit, False),
        PolicyInfo("y", "Y.", "mandatory", limit, False),
    ]

    assert reconcile_config(policies, {"x": {"limit": 8}})["x"] == ("mandatory", {"limit": 8})


def test_as_the_engine_every_entry_reaches_the_pack_all_and_unknown_names_included() -> None:
    # pulumi pkg/resource/analyzer/config.go, applyConfig: entries are applied by name, known or
    # not; an empty one is dropped when the file is parsed.
    config = {"all": "advisory", "c": {"enforcementLevel": "disabled", "x": 1}, "d": {}}

    assert reconcile_config(POLICIES, config, strict=False) == {
        "a": ("advisory", {"limit": 8}),
        "b": ("advisory", {}),
        "all": ("advisory", {}),
        "c": ("disabled", {"x": 1}),
    }


def test_as_the_engine_an_unknown_name_without_a_level_fails_the_configuration() -> None:
    # pulumi analyzer_plugin.go, Configure: "invalid enforcement level %q".
    with pytest.raises(PolicyConfigError) as error:
        reconcile_config(POLICIES, {"c": {"limit": 4}}, strict=False)

    assert list(error.value.problems) == ['c: invalid enforcement level ""']


def test_a_setting_two_policies_share_must_have_one_value() -> None:
    exempt = {"exempt": {"type": "array", "default": ["kube-system"]}}
    policies = [
        PolicyInfo("x", "X.", "mandatory", exempt, False),
        PolicyInfo("y", "Y.", "mandatory", exempt, False),
    ]

    with pytest.raises(PolicyConfigError) as error:
        reconcile_config(policies, {"x": {"exempt": ["kube-system", "monitoring"]}})

    assert list(error.value.problems) == [
        'exempt: one setting for x, y, which the config gives different values (x: ["kube-system",'
        ' "monitoring"]; y: ["kube-system"]). Fix: set exempt to ["kube-system", "monitoring"] in'
        ' each: "y": {"exempt": ["kube-system", "monitoring"]}'
    ]
    assert reconcile_config(policies, {"x": {"exempt": []}, "y": {"exempt": []}})["y"] == (
        "mandatory",
        {"exempt": []},
    )


MAX_GPUS = {"maxGpusPerPod": {"type": "integer", "default": 8.0}}
GPU_POD_POLICIES = [
    PolicyInfo("gpu-pods-max-gpus", "X.", "mandatory", MAX_GPUS, False),
    PolicyInfo("gpu-pods-max-claimed-gpus", "Y.", "mandatory", MAX_GPUS, False),
]


def gpu_pod_config_problems(config: dict[str, Any]) -> list[str]:
    """The problems `reconcile_config` refuses `config` of the GPU pod policies with."""
    with pytest.raises(PolicyConfigError) as error:
        reconcile_config(GPU_POD_POLICIES, config)
    return list(error.value.problems)


def test_a_policy_added_later_left_at_its_default_is_told_the_value_set_for_the_other() -> None:
    # A config written before gpu-pods-max-claimed-gpus existed sets only gpu-pods-max-gpus.
    config = {"gpu-pods-max-gpus": {"maxGpusPerPod": 16}}

    assert gpu_pod_config_problems(config) == [
        "maxGpusPerPod: one setting for gpu-pods-max-gpus, gpu-pods-max-claimed-gpus, which the"
        " config gives different values (gpu-pods-max-gpus: 16; gpu-pods-max-claimed-gpus: 8)."
        ' Fix: set maxGpusPerPod to 16 in each: "gpu-pods-max-claimed-gpus": {"maxGpusPerPod": 16}'
    ]


@pytest.mark.parametrize("entry", ["advisory", {"enforcementLevel": "advisory"}])
def test_the_entry_to_set_keeps_the_level_the_config_gives_the_policy(entry: Any) -> None:
    config = {"gpu-pods-max-gpus": {"maxGpusPerPod": 16}, "gpu-pods-max-claimed-gpus": entry}

    assert gpu_pod_config_problems(config) == [
        "maxGpusPerPod: one setting for gpu-pods-max-gpus, gpu-pods-max-claimed-gpus, which the"
        " config gives different values (gpu-pods-max-gpus: 16; gpu-pods-max-claimed-gpus: 8)."
        ' Fix: set maxGpusPerPod to 16 in each: "gpu-pods-max-claimed-gpus":'
        ' {"enforcementLevel": "advisory", "maxGpusPerPod": 16}'
    ]


def test_shared_values_both_set_apart_from_the_default_leave_the_choice_to_the_config() -> None:
    config = {
        "gpu-pods-max-gpus": {"maxGpusPerPod": 4},
        "gpu-pods-max-claimed-gpus": {"maxGpusPerPod": 16},
    }

    assert gpu_pod_config_problems(config) == [
        "maxGpusPerPod: one setting for gpu-pods-max-gpus, gpu-pods-max-claimed-gpus, which the"
        " config gives different values (gpu-pods-max-gpus: 4; gpu-pods-max-claimed-gpus: 16)."
        " Fix: choose one of 4, 16 and set maxGpusPerPod to it in each of gpu-pods-max-gpus,"
        " gpu-pods-max-claimed-gpus"
    ]

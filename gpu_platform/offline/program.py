"""Run the real Pulumi program offline, under the SDK's mock monitor, and record what it declares.

Nothing here talks to a cloud or to the Pulumi service. Each resource the program registers is
recorded with the inputs it would be created with (engine, camelCase names), its parent, its
dependencies and its resource options; each invoke (a cluster or instance-type lookup) is
answered by a stand-in from `gpu_platform.offline.stand_ins` and recorded as such. The offline plan
command and the tests drive the program through this one runner.
"""

import json
import logging
import runpy
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf.json_format import MessageToDict
from pulumi.output import Unknown
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.offline import stand_ins
from gpu_platform.project import Project
from gpu_platform.stack_files import plain_config, stack_config


@dataclass(frozen=True)
class PlannedResource:
    """One resource as the program would ask the engine to create it."""

    urn: str
    type: str
    name: str
    inputs: dict[str, Any]
    parent: str | None
    custom: bool
    provider: str | None
    dependencies: tuple[str, ...]
    property_dependencies: dict[str, tuple[str, ...]]
    protect: bool
    ignore_changes: tuple[str, ...]
    delete_before_replace: bool = False
    """Whether a replacement deletes it before creating its successor."""
    retain_on_delete: bool = False
    """Whether deleting it (a destroy, or the old one of a replacement) leaves it in the cloud."""
    secret_inputs: frozenset[str] = frozenset()
    """Top-level inputs that are, or hold, a secret: shown masked, given to the policy pack in
    plain text as the engine does."""
    computed_outputs: dict[str, Any] = field(default_factory=dict)
    """The outputs the provider adds to the inputs on creating it (stand-ins: ids, ARNs,
    generated names): not known until `pulumi up` creates it."""
    id: str | None = None
    """The id a stand-in gives it (`subnet-...`), by which the program's other resources refer to
    it: what `pulumi up` would read from the cloud."""
    aliases: tuple[dict[str, Any], ...] = ()
    """Its aliases as the engine is told them (`{"spec": {"noParent": True}}`: it was once a
    child of the stack itself), which keep its state when its URN changes."""
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    """How long the provider may take to create, update or delete it, where the program says
    (`{"update": "300m"}`, Go durations); the provider's own defaults elsewhere."""
    unknown_inputs: frozenset[str] = frozenset()
    """Inputs the program left unknown (`scalingConfig.desiredSize`), as paths: left out of
    `inputs`. Only a preview leaves an input unknown that `pulumi up` knows."""


@dataclass(frozen=True)
class InvokeRecord:
    """A function call the program made (`aws:eks/getCluster:getCluster`), and the stand-in
    answer it got."""

    token: str
    args: dict[str, Any]
    result: dict[str, Any]
    provider: str | None = None
    """The provider it went through (`<urn>::<id>`); None for the stack's default."""


class _WarningsKept(logging.Logger):
    """The mocks' engine log (`pulumi.runtime.mocks.MockEngine`): the program's warnings kept in
    the plan instead of printed, as the engine keeps them for `pulumi preview`'s summary."""

    def __init__(self, plan: "Plan") -> None:
        super().__init__(__name__)
        self.plan = plan

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.plan.logged_warnings.append(str(msg))


@dataclass
class Plan:
    """What one run of the program declared, resources in the order the program constructed
    them."""

    stack: str
    resources: list[PlannedResource] = field(default_factory=list)
    invokes: list[InvokeRecord] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: frozenset[str] = frozenset()
    error: BaseException | None = None
    component_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What each component (and the stack) registered as its outputs, by URN: what the stack's
    state keeps of it after the update."""
    component_secret_outputs: dict[str, frozenset[str]] = field(default_factory=dict)
    """Which of those outputs the state keeps encrypted, by URN."""
    logged_warnings: list[str] = field(default_factory=list)
    """What the program logged as warnings (`pulumi.log.warn`), which `pulumi preview` shows."""

    def of_type(self, type_: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == type_]

    def named(self, name: str, type_: str | None = None) -> PlannedResource:
        matches = [r for r in self.resources if r.name == name and type_ in (None, r.type)]
        if len(matches) != 1:
            raise LookupError(f"{len(matches)} resources named {name!r} of type {type_}")
        return matches[0]

    def children_of(self, parent: PlannedResource) -> list[PlannedResource]:
        return [r for r in self.resources if r.parent == parent.urn]


def run_program(
    stack: str = "dev",
    config: Mapping[str, Any] | None = None,
    project: Project | None = None,
    raise_errors: bool = True,
    preview: bool = False,
    on_first_resource: Callable[[], object] | None = None,
) -> Plan:
    """Run the project's program once for `stack` (or for `config`, fully qualified keys) and
    record it. `project` defaults to the one the current directory is in. With `preview`, the
    program runs as `pulumi preview` runs it (`pulumi.runtime.is_dry_run()`); otherwise as
    `pulumi up` does.

    With `raise_errors=False` an exception from the program is kept in `Plan.error`, beside
    whatever it registered before failing. `on_first_resource` is called as the program
    constructs its first resource: past the loading of its config, which refuses a stack before
    anything is registered.
    """
    project = project or Project.find()
    values = stack_config(stack, project) if config is None else dict(config)
    plan = Plan(stack=stack)
    monitor = _RecordingMonitor(_StandInMocks(plan), plan)
    settings.reset_options(project=project.name, stack=stack, preview=preview)
    _set_config(values)
    mocks.set_mocks(
        monitor.mocks,
        project=project.name,
        stack=stack,
        preview=preview,
        logger=_WarningsKept(plan),
        monitor=monitor,
        # The self-managed backends' one organization.
        organization="organization",
    )
    # Pulumi runs a Python program with its directory first on the module path, so that the
    # program imports its own packages (here `components`).
    program_dir = str(project.program.parent)
    if program_dir not in sys.path:
        sys.path.insert(0, program_dir)

    constructed: dict[tuple[str, str], int] = {}
    stand_ins.CREATED_CLUSTERS.clear()

    def record_construction(
        args: pulumi.ResourceTransformationArgs,
    ) -> pulumi.ResourceTransformationResult | None:
        if not constructed and on_first_resource is not None:
            on_first_resource()
        constructed.setdefault((args.type_, args.name), len(constructed))
        stand_ins.created(args.type_, args.name, args.props)
        return None

    def program() -> None:
        pulumi.runtime.register_stack_transformation(record_construction)
        runpy.run_path(str(project.program), run_name="__main__")

    try:
        _sync_await(mocks.run_pulumi_func(program))
        plan.outputs, plan.secret_outputs = _stack_outputs()
    except Exception as error:
        if raise_errors:
            raise
        plan.error = error
    finally:
        # The clusters this program creates are its own: a lookup made after it (another
        # program, a test calling a stand-in) must not find them missing.
        stand_ins.CREATED_CLUSTERS.clear()
    # The engine is told of resources as their inputs resolve, in an order that changes from run
    # to run; the order the program constructs them in does not: pools in the stack file's order.
    plan.resources.sort(key=lambda r: constructed.get((r.type, r.name), len(constructed)))
    return plan


def _set_config(values: Mapping[str, Any]) -> None:
    """Hand the program its config as the Pulumi CLI does: each key's value as a string (JSON for
    structured values), and the keys that hold a secret, anywhere in their value, as secret."""
    plain, secret_keys = plain_config(values)
    flat = {
        key: value if isinstance(value, str) else json.dumps(value) for key, value in plain.items()
    }
    set_all_config(flat, sorted(secret_keys))


def _stack_outputs() -> tuple[dict[str, Any], frozenset[str]]:
    root = settings.get_root_resource()
    outputs: dict[str, Any] = {}
    secrets: set[str] = set()
    for name, value in getattr(root, "outputs", {}).items():
        output = pulumi.Output.from_input(value)
        outputs[name] = _sync_await(output.future())
        if _sync_await(output.is_secret()):
            secrets.add(name)
    return outputs, frozenset(secrets)


class _StandInMocks(mocks.Mocks):
    """Answers invokes and computed outputs with the stand-ins, recording every invoke."""

    def __init__(self, plan: Plan):
        self.plan = plan

    def call(self, args: mocks.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        try:
            result = stand_ins.invoke(args.token, dict(args.args))
        except stand_ins.LookupFailed as failed:
            self.plan.invokes.append(
                InvokeRecord(args.token, dict(args.args), {}, args.provider or None)
            )
            # The SDK raises "invoke of <token> failed: <reason> (<property>)".
            return {}, [("", str(failed))]
        self.plan.invokes.append(
            InvokeRecord(args.token, dict(args.args), result, args.provider or None)
        )
        # No check failures; the mock monitor iterates this list, so it cannot be None.
        return result, []

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict]:
        outputs = stand_ins.computed_outputs(args.typ, args.name, dict(args.inputs))
        # A stand-in may give the resource's id as its cloud spells one (`sg-...`).
        resource_id = outputs.pop("id", f"{args.name}-id")
        return resource_id, {**args.inputs, **outputs}


class _RecordingMonitor(mocks.MockMonitor):
    """The SDK's mock monitor, also keeping what `Mocks.new_resource` is not told: the parent,
    dependencies and resource options of each registration."""

    def __init__(self, stand_in_mocks: _StandInMocks, plan: Plan):
        super().__init__(stand_in_mocks)
        self.plan = plan

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = rpc.deserialize_properties(request.object)
            self.plan.resources.append(
                PlannedResource(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    inputs=_plain(inputs),
                    parent=request.parent or None,
                    custom=request.custom,
                    provider=request.provider or None,
                    dependencies=tuple(request.dependencies),
                    property_dependencies={
                        key: tuple(deps.urns) for key, deps in request.propertyDependencies.items()
                    },
                    protect=request.protect,
                    ignore_changes=tuple(request.ignoreChanges),
                    delete_before_replace=request.deleteBeforeReplace,
                    retain_on_delete=request.retainOnDelete,
                    secret_inputs=frozenset(k for k, v in inputs.items() if _holds_secret(v)),
                    computed_outputs=_computed(inputs, rpc.deserialize_properties(response.object)),
                    aliases=tuple(MessageToDict(alias) for alias in request.aliases),
                    custom_timeouts=MessageToDict(request.customTimeouts),
                    unknown_inputs=frozenset(_unknown_paths(inputs)),
                    id=response.id or None,
                )
            )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        outputs = rpc.deserialize_properties(request.outputs)
        self.plan.component_outputs[request.urn] = _plain(outputs)
        self.plan.component_secret_outputs[request.urn] = frozenset(
            k for k, v in outputs.items() if _holds_secret(v)
        )
        return super().RegisterResourceOutputs(request)


def _computed(inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in _plain(outputs).items() if k not in inputs or _plain(inputs[k]) != v}


def _unknown_paths(value: Any, path: str = "") -> list[str]:
    if _is_unknown(value):
        return [path]
    if _is_secret(value):
        return _unknown_paths(value["value"], path)
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in _unknown_paths(v, f"{path}.{k}".lstrip("."))]
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in _unknown_paths(v, f"{path}[{i}]")]
    return []


def _is_unknown(value: Any) -> bool:
    # The SDK deserialises an unknown as `Unknown` in a preview, as None otherwise
    # (`rpc.deserialize_property`).
    return isinstance(value, Unknown)


def _is_secret(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


def _holds_secret(value: Any) -> bool:
    if _is_secret(value):
        return True
    if isinstance(value, Mapping):
        return any(_holds_secret(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_secret(v) for v in value)
    return False


def _plain(value: Any) -> Any:
    """Resource inputs as JSON-able values: unknowns dropped, secrets unwrapped, whole numbers
    as integers (the engine's protocol carries every number as a double, and the engine shows
    `3`, not `3.0`)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if _is_secret(value):
        return _plain(value["value"])
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if not _is_unknown(v)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value if not _is_unknown(v)]
    return value

"""Run a CrossGuard policy pack over planned resources the way the Pulumi engine does.

The engine starts a Python pack as `python -u -m pulumi.policy <engine-address> <pack-dir>`,
reads the port the pack prints, and talks to it over the analyzer gRPC protocol:
`GetAnalyzerInfo`, `ConfigureStack`, `Configure` (the pack's configuration reconciled with each
policy's schema defaults), then for every resource `Remediate` and `Analyze` (on the remediated
properties), and `AnalyzeStack` over them all. AnalyzeStack sees each resource's outputs
(pulumi `pkg/resource/deploy/step_generator.go`: "AnalyzeStack is called on the final
outputs"): the remediated inputs and what the provider computes on creating it, which a
preview does not know yet (`preview=True`) and an update does. `PolicyPack` does the same, so
the offline plan and the tests see the verdicts `pulumi preview --policy-pack` would show.

The pack's log lines (notes on checks skipped for values not known yet) reach the engine on the
pack's stdout and stderr, which it shows as information; `PolicyPack.notes` collects them.
pulumi-policy parses the engine address but never connects to it, so none is served here.
"""

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import grpc
import jsonschema
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from gpu_platform.offline.namespace_levels import config_for_plan

# The pack ships inside the package, laid out as `pulumi policy new` makes it, so that an
# installed wheel carries it: `gpu-platform policy-pack-path` prints where, for
# `pulumi preview --policy-pack`.
PACK_DIR = Path(__file__).resolve().parent.parent / "policy_pack"
LEVELS = ("advisory", "mandatory", "remediate", "disabled")
STARTUP_TIMEOUT_SECONDS = 60.0
CALL_TIMEOUT_SECONDS = 120.0
# The pack never dials the engine address (see the module docstring); any address will do.
_ENGINE_ADDRESS = "127.0.0.1:0"
_MAX_MESSAGE_BYTES = 400 * 1024 * 1024  # as the engine and the pack allow
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""How the engine sends a value not known yet (pulumi `plugin.UnknownStringValue`)."""


class PlannedResource(Protocol):
    """What the analysis reads of a resource the program registered
    (`gpu_platform.offline.program`)."""

    @property
    def urn(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...
    @property
    def parent(self) -> str | None: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def dependencies(self) -> Sequence[str]: ...
    @property
    def property_dependencies(self) -> Mapping[str, Sequence[str]]: ...
    @property
    def protect(self) -> bool: ...
    @property
    def ignore_changes(self) -> Sequence[str]: ...
    @property
    def computed_outputs(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Verdict:
    """One policy's verdict on one resource (or, with an empty `urn`, on the whole stack)."""

    policy_name: str
    enforcement_level: str
    """`advisory` or `mandatory` for a violation, `remediate` for a change the policy made."""
    message: str
    urn: str

    @property
    def mandatory(self) -> bool:
        return self.enforcement_level == "mandatory"


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    description: str
    enforcement_level: str
    config_schema: Mapping[str, Any]
    """JSON schema of each parameter, by name."""
    stack_policy: bool


class PolicyPackError(RuntimeError):
    """The pack failed to start, or failed a call; the message carries its output."""


class PolicyConfigError(ValueError):
    """The policy configuration names an unknown policy or parameter, or a value its schema
    does not allow. The engine ignores unknown names; the offline plan refuses them, so a
    misspelt key does not silently leave a policy at its default."""

    def __init__(self, problems: Sequence[str]):
        super().__init__("invalid policy configuration:\n" + "\n".join(f"  {p}" for p in problems))
        self.problems = tuple(problems)


def analyze_plan(
    resources: Sequence[PlannedResource],
    pack_dir: Path = PACK_DIR,
    config: Mapping[str, Any] | None = None,
) -> list[Verdict]:
    """The verdicts of the pack in `pack_dir` on `resources`, configured by `config`.

    `config` has the shape of `pulumi preview --policy-pack-config` files: policy name to an
    enforcement level, or to an object of parameters with an optional `enforcementLevel`;
    `all` sets every policy's level. Without one, the Namespaces' Pod Security levels are
    listed as a stack's policy config lists them (`namespace_levels`).
    """
    with PolicyPack(pack_dir) as pack:
        pack.configure(config_for_plan(config, resources))
        return pack.analyze(resources)


class PolicyPack:
    """A running policy pack process, stopped on leaving the `with` block."""

    def __init__(
        self,
        pack_dir: Path = PACK_DIR,
        *,
        python: str = sys.executable,
        project: str = "gpu-platform",
        stack: str = "dev",
        preview: bool = True,
    ):
        self.pack_dir = pack_dir.resolve()
        self.preview = preview
        self.log_lines: list[str] = []
        env = {
            **os.environ,
            "PULUMI_PROJECT": project,
            "PULUMI_STACK": stack,
            "PULUMI_DRY_RUN": str(preview).lower(),
        }
        self._process = subprocess.Popen(
            [python, "-u", "-m", "pulumi.policy", _ENGINE_ADDRESS, str(self.pack_dir)],
            cwd=self.pack_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._partial: dict[int, bytes] = {}
        self._open_streams: set[int] = set()
        self._port_read = False
        self._wake_read, self._wake_write = os.pipe()
        self._channel: grpc.Channel | None = None
        # gRPC's `future()` starts a thread per call to poll for its completion; one thread
        # making blocking calls costs a third of that per resource.
        self._caller = ThreadPoolExecutor(max_workers=1, thread_name_prefix="policy-pack-call")
        self._levels: dict[str, str] = {}
        try:
            assert self._process.stdout is not None and self._process.stderr is not None
            self._stdout_fd = self._process.stdout.fileno()
            for stream in (self._process.stdout, self._process.stderr):
                os.set_blocking(stream.fileno(), False)
                self._open_streams.add(stream.fileno())
                self._partial[stream.fileno()] = b""
            os.set_blocking(self._wake_read, False)
            os.set_blocking(self._wake_write, False)
            port = self._read_port()
            self._channel = grpc.insecure_channel(
                f"127.0.0.1:{port}",
                options=[("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES)],
            )
            self._stub = analyzer_pb2_grpc.AnalyzerStub(self._channel)
            info = self._call(self._stub.GetAnalyzerInfo, empty_pb2.Empty())
            self.name: str = info.name
            self.policies = [_policy_info(p) for p in info.policies]
            self._call(
                self._stub.ConfigureStack,
                analyzer_pb2.AnalyzerStackConfigureRequest(
                    stack=stack, project=project, dry_run=preview
                ),
            )
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "PolicyPack":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._caller.shutdown(wait=False, cancel_futures=True)
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):  # already closed by an earlier close()
                os.close(fd)
        self._wake_read = self._wake_write = -1

    @property
    def running(self) -> bool:
        return self._process.poll() is None

    @property
    def notes(self) -> list[str]:
        """What the policies logged, such as checks skipped for values not known yet."""
        return [line.removeprefix("info: ") for line in self.log_lines if line.startswith("info: ")]

    def configure(self, config: Mapping[str, Any] | None = None, *, strict: bool = True) -> None:
        """Configure every policy: its level and parameters from `config` over its defaults.

        `strict=False` passes on parameters a policy does not declare, as the engine does: the
        schema the analyzer protocol carries cannot forbid them."""
        reconciled = reconcile_config(self.policies, config, strict=strict)
        self._levels = {name: level for name, (level, _) in reconciled.items()}
        request = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, (level, properties) in reconciled.items():
            policy_config = request.policyConfig[name]
            policy_config.enforcementLevel = analyzer_pb2.EnforcementLevel.Value(level.upper())
            policy_config.properties.update(properties)
        self._call(self._stub.Configure, request)

    def analyze(self, resources: Sequence[PlannedResource]) -> list[Verdict]:
        """Remediate and analyze each resource, then analyze the stack, as a preview does."""
        if not self._levels:
            self.configure(None)
        by_urn = {resource.urn: resource for resource in resources}
        verdicts: list[Verdict] = []
        analyzed: list[tuple[PlannedResource, analyzer_pb2.AnalyzeRequest]] = []
        for resource in resources:
            request, found = self._analyze_resource(resource, by_urn)
            verdicts += found
            analyzed.append((resource, request))
        stack_request = analyzer_pb2.AnalyzeStackRequest(
            resources=[_stack_resource(r, request, self.preview) for r, request in analyzed]
        )
        verdicts += self._verdicts(self._call(self._stub.AnalyzeStack, stack_request), "")
        return verdicts

    def analyze_before_step(
        self, resource: PlannedResource, stack: Sequence[PlannedResource] = ()
    ) -> list[Verdict]:
        """What the engine learns of `resource` before it applies it at `pulumi up`: its
        remediations and its resource policies' verdicts. The stack policies run only once
        every step is done (pulumi pkg/engine/deployment_executor.go)."""
        if not self._levels:
            self.configure(None)
        by_urn = {found.urn: found for found in (*stack, resource)}
        return self._analyze_resource(resource, by_urn)[1]

    def _analyze_resource(
        self, resource: PlannedResource, by_urn: Mapping[str, PlannedResource]
    ) -> tuple[analyzer_pb2.AnalyzeRequest, list[Verdict]]:
        """Remediate and analyze one resource: the request as remediated, and the verdicts."""
        request = analyzer_pb2.AnalyzeRequest(
            urn=resource.urn,
            type=resource.type,
            name=resource.name,
            properties=_struct(resource.inputs),
            options=_options(resource),
        )
        provider = _provider(resource, by_urn)
        if provider is not None:
            request.provider.CopyFrom(provider)
        verdicts: list[Verdict] = []
        remediated = self._call(self._stub.Remediate, request)
        for remediation in remediated.remediations:
            verdicts.extend(self._remediation_verdicts(resource, request, remediation))
        verdicts += self._verdicts(self._call(self._stub.Analyze, request), resource.urn)
        return request, verdicts

    def _remediation_verdicts(
        self,
        resource: PlannedResource,
        request: analyzer_pb2.AnalyzeRequest,
        remediation: Any,
    ) -> list[Verdict]:
        if remediation.diagnostic:
            self.log_lines.append(f"info: {remediation.diagnostic}")
        if not remediation.HasField("properties"):
            return []
        changed = _changed_paths(
            json_format.MessageToDict(request.properties),
            json_format.MessageToDict(remediation.properties),
        )
        # Later policies, and the analysis, see the properties as remediated.
        request.properties.CopyFrom(remediation.properties)
        if not changed:
            return []
        message = f"{remediation.description}\nchanged {', '.join(changed)}"
        return [Verdict(remediation.policyName, "remediate", message, resource.urn)]

    def _verdicts(self, response: Any, default_urn: str) -> list[Verdict]:
        verdicts = []
        for diagnostic in response.diagnostics:
            message = diagnostic.message.removeprefix(f"{diagnostic.description}\n")
            level = analyzer_pb2.EnforcementLevel.Name(diagnostic.enforcementLevel).lower()
            verdicts.append(
                Verdict(diagnostic.policyName, level, message, diagnostic.urn or default_urn)
            )
        return verdicts

    # --- the process and its output ------------------------------------------------------

    def _read_port(self) -> int:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        stdout = self._stdout_fd
        while True:
            first_line, newline, rest = self._partial[stdout].partition(b"\n")
            if newline:
                self._partial[stdout] = rest
                self._port_read = True
                try:
                    return int(first_line)
                except ValueError:
                    raise self._failure(f"printed {first_line!r} instead of its port") from None
            if stdout not in self._open_streams:
                raise self._failure("exited before printing its port")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure(f"printed no port in {STARTUP_TIMEOUT_SECONDS:.0f}s")
            self._wait_for_output(remaining)

    def _call(self, method: Any, request: Any) -> Any:
        """Call `method`, collecting the pack's output while it runs: a pack blocks once a full
        pipe stops taking its log lines."""
        future = self._caller.submit(method, request, timeout=CALL_TIMEOUT_SECONDS)
        future.add_done_callback(self._wake)
        while not future.done():
            self._wait_for_output(None)
        self._read_output()
        try:
            return future.result()
        except grpc.RpcError as error:
            raise self._failure(f"failed {type(request).__name__}: {error.details()}") from None

    def _wake(self, _future: Any) -> None:
        # A full pipe means a wake-up is pending already; a closed one, that we are closing.
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b".")

    def _wait_for_output(self, timeout: float | None) -> None:
        readable, _, _ = select.select([*self._open_streams, self._wake_read], [], [], timeout)
        if self._wake_read in readable:
            os.read(self._wake_read, 4096)
        self._read_output()

    def _read_output(self) -> None:
        for fd in list(self._open_streams):
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    self._open_streams.discard(fd)
                    break
                self._partial[fd] += chunk
        for fd, pending in self._partial.items():
            # The first line on stdout is the port, not a log line.
            if fd == self._stdout_fd and not self._port_read:
                continue
            *lines, self._partial[fd] = pending.split(b"\n")
            self.log_lines += [line.decode(errors="replace") for line in lines]

    def _failure(self, what: str) -> PolicyPackError:
        self._read_output()
        output = "\n".join(self.log_lines[-40:]) or "(no output)"
        return PolicyPackError(f"policy pack {self.pack_dir} {what}. Its output:\n{output}")


def reconcile_config(
    policies: Sequence[PolicyInfo], config: Mapping[str, Any] | None, *, strict: bool = True
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each policy's level and parameters, as the engine reconciles them: the schema's defaults,
    then `all`'s level, then each policy's own entry; checked against the schemas.

    When `strict`, parameters a policy does not declare and names the pack has no policy for are
    refused. Otherwise they pass as the engine passes them (pulumi `pkg/resource/analyzer/
    config.go`, `applyConfig`): every entry, `all` and unknown names included, reaches the pack,
    and an entry without a valid level fails the whole configuration (`analyzer_plugin.go`,
    `Configure`: "invalid enforcement level")."""
    by_name = {policy.name: policy for policy in policies}
    reconciled = {
        policy.name: (
            policy.enforcement_level,
            {k: v["default"] for k, v in policy.config_schema.items() if "default" in v},
        )
        for policy in policies
    }
    problems: list[str] = []
    given = dict(config or {})
    if "all" in given:
        level = _level(given.pop("all"), "all", problems)
        if level is not None:
            reconciled = {name: (level, props) for name, (_, props) in reconciled.items()}
            if not strict:
                reconciled["all"] = (level, {})
    for name, entry in given.items():
        if name not in by_name:
            if strict:
                problems.append(
                    f"{name}: no such policy; the pack has {', '.join(sorted(by_name))}"
                )
            elif entry != {}:  # the engine drops an empty entry
                reconciled[name] = _unknown_policy_entry(name, entry, problems)
            continue
        level, properties = reconciled[name]
        if isinstance(entry, Mapping):
            parameters = {k: v for k, v in entry.items() if k != "enforcementLevel"}
            if "enforcementLevel" in entry:
                level = _level(entry["enforcementLevel"], name, problems) or level
            problems += _schema_problems(by_name[name], parameters, strict)
            properties = {**properties, **parameters}
        else:
            level = _level(entry, name, problems) or level
        reconciled[name] = (level, properties)
    problems += _shared_setting_problems(policies, reconciled, given)
    if problems:
        raise PolicyConfigError(problems)
    return reconciled


def _unknown_policy_entry(name: str, entry: Any, problems: list[str]) -> tuple[str, dict[str, Any]]:
    """The engine's entry for a policy the pack lacks, or a problem where it would fail."""
    if isinstance(entry, Mapping):
        parameters = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        level = entry.get("enforcementLevel", "")
    else:
        parameters, level = {}, entry
    if level not in LEVELS:
        problems.append(f"{name}: invalid enforcement level {json.dumps(level)}")
    return str(level), parameters


def _shared_setting_problems(
    policies: Sequence[PolicyInfo],
    reconciled: Mapping[str, tuple[str, dict[str, Any]]],
    given: Mapping[str, Any],
) -> list[str]:
    """A parameter several policies declare is one setting (the pack's `exemptNamespaces`); the
    engine configures each policy on its own, so a config can give them different values. Each
    problem ends with the entries to set (`_shared_setting_fix`), each as `given`'s entry of the
    policy with the setting merged in."""
    sharing: dict[str, list[PolicyInfo]] = {}
    for policy in policies:
        for key in policy.config_schema:
            sharing.setdefault(key, []).append(policy)
    problems = []
    for key, sharers in sharing.items():
        values = {p.name: _number_as_written(reconciled[p.name][1].get(key)) for p in sharers}
        if len(sharers) > 1 and len({json.dumps(v) for v in values.values()}) > 1:
            given_values = "; ".join(f"{name}: {json.dumps(v)}" for name, v in values.items())
            problems.append(
                f"{key}: one setting for {', '.join(values)}, which the config gives different "
                f"values ({given_values}). {_shared_setting_fix(key, sharers, values, given)}"
            )
    return problems


def _shared_setting_fix(
    key: str, sharers: Sequence[PolicyInfo], values: Mapping[str, Any], given: Mapping[str, Any]
) -> str:
    """How to give the policies sharing `key` one value: the value of those set apart from
    their schema's default where they agree (a policy the pack added later has only its default
    in a config written before it), else a choice among the values given. Each entry to set is
    the config's entry of the policy with the value merged in, so that pasting it over that
    entry keeps its enforcement level and other settings."""
    chosen = {
        json.dumps(values[p.name])
        for p in sharers
        if values[p.name] != _number_as_written(p.config_schema[key].get("default"))
    }
    if len(chosen) != 1:
        choices = dict.fromkeys(json.dumps(v) for v in values.values())
        return (
            f"Fix: choose one of {', '.join(choices)} and set {key} to it in each of"
            f" {', '.join(values)}"
        )
    (value,) = chosen
    entries = ", ".join(
        f'"{name}": {json.dumps(_merged_entry(given.get(name), key, json.loads(value)))}'
        for name in values
        if json.dumps(values[name]) != value
    )
    return f"Fix: set {key} to {value} in each: {entries}"


def _merged_entry(entry: Any, key: str, value: Any) -> dict[str, Any]:
    """A policy's config `entry` (absent, a level alone, or an object) with `key` set to
    `value`."""
    if isinstance(entry, Mapping):
        return {**entry, key: value}
    if isinstance(entry, str):
        return {"enforcementLevel": entry, key: value}
    return {key: value}


def _number_as_written(value: Any) -> Any:
    """`value` with each whole float an int: a schema's default reaches the plan through the
    plugin protocol, whose Struct holds every number as a double (google/protobuf struct.proto,
    `number_value`), so a default 8 arrives as 8.0 beside a config's 8."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _number_as_written(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_number_as_written(v) for v in value]
    return value


def _level(value: Any, name: str, problems: list[str]) -> str | None:
    if value in LEVELS:
        return str(value)
    problems.append(
        f"{name}: enforcement level {json.dumps(value)} is not one of {', '.join(LEVELS)}"
    )
    return None


def _schema_problems(
    policy: PolicyInfo, parameters: Mapping[str, Any], strict: bool = True
) -> list[str]:
    schema = {
        "type": "object",
        "properties": dict(policy.config_schema),
        "additionalProperties": not strict,
    }
    problems = []
    for error in jsonschema.Draft7Validator(schema).iter_errors(dict(parameters)):
        key = ".".join(str(step) for step in error.absolute_path)
        where = f"{policy.name}.{key}" if key else policy.name
        allowed = ", ".join(sorted(policy.config_schema)) or "no parameters"
        detail = error.message
        if error.validator == "additionalProperties":
            detail += f" (it takes {allowed})"
        problems.append(f"{where}: {detail}")
    return problems


def _policy_info(policy: Any) -> PolicyInfo:
    return PolicyInfo(
        name=policy.name,
        description=policy.description,
        enforcement_level=analyzer_pb2.EnforcementLevel.Name(policy.enforcementLevel).lower(),
        config_schema=json_format.MessageToDict(policy.configSchema.properties),
        stack_policy=policy.policy_type == analyzer_pb2.PolicyType.POLICY_TYPE_STACK,
    )


def _struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(dict(values))
    return struct


def _options(resource: PlannedResource) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(
        protect=resource.protect,
        ignoreChanges=list(resource.ignore_changes),
        parent=resource.parent or "",
    )


def _provider(
    resource: PlannedResource, by_urn: Mapping[str, PlannedResource]
) -> analyzer_pb2.AnalyzerProviderResource | None:
    """The resource's provider as the engine describes it: its type, inputs, URN and name. A
    default provider the program never registered has no inputs."""
    if not resource.provider:
        return None
    urn = resource.provider.rsplit("::", 1)[0]
    declared = by_urn.get(urn)
    if declared is not None:
        return analyzer_pb2.AnalyzerProviderResource(
            type=declared.type, properties=_struct(declared.inputs), urn=urn, name=declared.name
        )
    # urn:pulumi:<stack>::<project>::<parent types$>pulumi:providers:<package>::<name>
    parts = urn.split("::")
    provider_type = parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""
    return analyzer_pb2.AnalyzerProviderResource(type=provider_type, urn=urn, name=parts[-1])


def _stack_resource(
    resource: PlannedResource, request: analyzer_pb2.AnalyzeRequest, preview: bool
) -> analyzer_pb2.AnalyzerResource:
    """The resource as `AnalyzeStack` sees it: its outputs (as `Analyze` saw it, remediated, and
    what the provider computes, unknown at a preview), with its links."""
    outputs = struct_pb2.Struct()
    outputs.CopyFrom(request.properties)
    outputs.update({k: UNKNOWN if preview else v for k, v in resource.computed_outputs.items()})
    stack_resource = analyzer_pb2.AnalyzerResource(
        urn=request.urn,
        type=request.type,
        name=request.name,
        properties=outputs,
        options=request.options,
        parent=resource.parent or "",
        dependencies=list(resource.dependencies),
    )
    if request.HasField("provider"):
        stack_resource.provider.CopyFrom(request.provider)
    for key, urns in resource.property_dependencies.items():
        if urns:  # as the engine does, properties without dependencies are left out
            stack_resource.propertyDependencies[key].urns.extend(urns)
    return stack_resource


def _changed_paths(before: Any, after: Any, path: str = "") -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        changed = []
        for key in sorted(before.keys() | after.keys()):
            step = f'["{key}"]' if "." in key or "/" in key else (f".{key}" if path else key)
            changed += _changed_paths(before.get(key), after.get(key), path + step)
        return changed
    return [] if before == after else [path]

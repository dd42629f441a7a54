"""The offline plan of a stack, from a program: `plan_stack`.

Runs the real program under the Pulumi SDK's mock monitor (`gpu_platform.offline.program`), then
the policy pack over what it declared through the analyzer protocol, as `pulumi preview
--policy-pack policies` would (`gpu_platform.offline.analyzer`). No credentials: the program's
cloud lookups are answered by stand-ins (`gpu_platform.offline.stand_ins`).
"""

import json
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_platform.config import ConfigError
from gpu_platform.idle_billing import idle_warnings
from gpu_platform.kubernetes.chart_images.prometheus_stack import unlocked_pin
from gpu_platform.lock.lockfile import LockError, MissingLockEntry, project_lock
from gpu_platform.offline.analyzer import PACK_DIR, PolicyPack, Verdict
from gpu_platform.offline.digest_waiver import digest_waiver_gaps
from gpu_platform.offline.drift_windows import closed_drift_windows
from gpu_platform.offline.driver_images import undeclared_driver_images
from gpu_platform.offline.exempt_namespaces import exemption_mismatches
from gpu_platform.offline.namespace_levels import config_for_plan
from gpu_platform.offline.program import Plan, run_program
from gpu_platform.offline.validation_warnings import unconfirmed_gke_scale_up
from gpu_platform.project import Project
from gpu_platform.versions import KUBE_PROMETHEUS_STACK_CHART

# Policy pack config per stack, beside the stack files: `<project>/policy-config/<stack>.json`.
POLICY_CONFIG_DIR = "policy-config"
DEFAULT_STACK = "dev"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


class NoStackNamed(ValueError):
    """No stack was named and the project has several, none of them `dev`."""


class NotAPolicyPack(FileNotFoundError):
    """The policy pack directory given has no PulumiPolicy.yaml."""


class ProgramFailed(Exception):
    """The program raised `error` (in the project at `project_dir`)."""

    def __init__(self, error: BaseException, project_dir: Path) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error
        self.project_dir = project_dir


@dataclass(frozen=True)
class OfflinePlan:
    """What `plan_stack` made of a stack: the resources the program declared and the policy
    pack's verdicts on them."""

    plan: Plan
    verdicts: tuple[Verdict, ...]
    pack_dir: Path
    """The policy pack that judged the plan."""
    warnings: tuple[str, ...]
    """What the plan could not check but `pulumi up` would use as it is, and where the stack's
    config and its policy config disagree."""

    @property
    def mandatory_violations(self) -> tuple[Verdict, ...]:
        """The verdicts that would stop `pulumi up`."""
        return tuple(v for v in self.verdicts if v.mandatory)


def plan_stack(
    stack: str | None = None,
    project: Project | None = None,
    policy_pack: Path | None = None,
    policy_config: Path | None = None,
) -> OfflinePlan:
    """Plan `stack` (None: `default_stack`) of `project` (None: the one the current directory
    is in) offline and run the policy pack (None: the shipped one) over it, configured from
    `policy_config` (None: the project's `policy-config/<stack>.json`, if any).

    Raises what `program_plan` raises; `ProjectNotFound`, `NoStackNamed`, `NotAPolicyPack`;
    for the policy config `FileNotFoundError` or `ValueError` (`PolicyConfigError` among them);
    `PolicyPackError` for a pack that fails."""
    project = project or Project.find()
    if stack is None:
        stack = default_stack(project)
    if policy_pack is not None and not (policy_pack / "PulumiPolicy.yaml").is_file():
        raise NotAPolicyPack(f"no policy pack at {policy_pack}: it has no PulumiPolicy.yaml")
    pack_dir = policy_pack or PACK_DIR
    with _pack_started_meanwhile(pack_dir, project.name, stack) as pack:
        plan = program_plan(stack, project, on_first_resource=pack.start)
        config = read_policy_config(project.directory / POLICY_CONFIG_DIR, stack, policy_config)
        verdicts = _verdicts(pack.started(), plan, config)
    where = str(policy_config or f"{POLICY_CONFIG_DIR}/{stack}.json")
    warnings = (
        *_unlocked_chart_pins(plan),
        *undeclared_driver_images(plan, config, where),
        *digest_waiver_gaps(config, where),
        *unconfirmed_gke_scale_up(plan),
        *exemption_mismatches(plan, config),
        *_idle_billing_warnings(plan),
        *plan.logged_warnings,
        *closed_drift_windows(plan),
    )
    return OfflinePlan(plan, tuple(verdicts), pack_dir, warnings)


def program_plan(
    stack: str,
    project: Project | None = None,
    on_first_resource: Callable[[], object] | None = None,
) -> Plan:
    """What the program declares for `stack` under the stand-ins, without the policy pack
    (`run_program` calls `on_first_resource`).

    Raises `FileNotFoundError`, `gpu_platform.stack_files.StackFileError` or `OSError` for a
    stack file it cannot read; `ConfigError` for an invalid stack; `LockError` or
    `MissingLockEntry` for a lock that cannot be read or lacks a fact; `ProgramFailed` for any
    other error the program raises."""
    plan = run_program(
        stack, project=project, raise_errors=False, on_first_resource=on_first_resource
    )
    if isinstance(plan.error, (ConfigError, LockError, MissingLockEntry)):
        raise plan.error
    if plan.error is not None:
        raise ProgramFailed(plan.error, (project or Project.find()).directory)
    return plan


def default_stack(project: Project) -> str:
    """The stack to plan when none is named: the project's only one, else `dev`."""
    stacks = project.stacks()
    if len(stacks) == 1:
        return stacks[0]
    if DEFAULT_STACK in stacks:
        return DEFAULT_STACK
    found = ", ".join(stacks) or f"no Pulumi.<stack>.yaml in {project.stack_config_dir}"
    raise NoStackNamed(f"Name the stack to plan: `gpu-platform plan STACK`. Stacks: {found}.")


def read_policy_config(config_dir: Path, stack: str, path: Path | None) -> dict[str, Any] | None:
    """The policy pack's config for a stack: the given file, else the project's own for the
    stack (`policy-config/<stack>.json`) if any."""
    if path is None:
        path = config_dir / f"{stack}.json"
        if not path.exists():
            return None
    if not path.is_file():
        raise FileNotFoundError(f"no policy config file {path}")
    try:
        config = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    except OSError as error:
        raise ValueError(f"cannot read the policy config {path}: {error.strerror}") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path} must hold a JSON object of policy names")
    return config


class _PackStart:
    """The policy pack, started in the background once `start` is called."""

    def __init__(self, executor: ThreadPoolExecutor, pack_dir: Path, project: str, stack: str):
        self._executor = executor
        self._pack = (pack_dir, project, stack)
        self.starting: Future[PolicyPack] | None = None

    def start(self) -> Future[PolicyPack]:
        if self.starting is None:
            pack_dir, project, stack = self._pack
            self.starting = self._executor.submit(
                PolicyPack, pack_dir, project=project, stack=stack
            )
        return self.starting

    def started(self) -> PolicyPack:
        return self.start().result()


@contextmanager
def _pack_started_meanwhile(pack_dir: Path, project: str, stack: str) -> Iterator[_PackStart]:
    """Starts the policy pack while the program runs, and stops it on leaving.

    Starting the pack is a Python process of its own importing the policy SDK (over half a
    second); the program's run is another. On a machine with two cores they overlap, so the
    plan costs the longer of the two, not their sum. The pack starts as the program registers
    its first resource, past its config: a stack the config refuses never starts it.
    """
    with ThreadPoolExecutor(max_workers=1) as executor:
        pack = _PackStart(executor, pack_dir, project, stack)
        try:
            yield pack
        finally:
            if pack.starting is not None and pack.starting.exception() is None:
                pack.starting.result().close()


def _verdicts(pack: PolicyPack, plan: Plan, config: Mapping[str, Any] | None) -> list[Verdict]:
    pack.configure(config_for_plan(config, plan.resources))
    return pack.analyze(plan.resources)


def _idle_billing_warnings(plan: Plan) -> list[str]:
    """Where a setting keeps an empty on-demand or spot GPU node billing over ten minutes
    (`gpu_platform.idle_billing`); nothing where the pools are secret."""
    if "idleBilling" not in plan.outputs or "idleBilling" in plan.secret_outputs:
        return []
    return idle_warnings(plan.outputs["idleBilling"])


def _unlocked_chart_pins(plan: Plan) -> list[str]:
    """Where the stack installs kube-prometheus-stack and the lock pins fewer of the chart's
    images than the platform does (`monitoring.installPrometheusStack`)."""
    chart = KUBE_PROMETHEUS_STACK_CHART
    if not any(r.inputs.get("chart") == chart.name for r in plan.of_type(HELM_RELEASE)):
        return []
    try:
        note = unlocked_pin(project_lock(), plan.stack, chart)
    except LockError:
        return []  # the plan read no lock, or reported it
    return [] if note is None else [note]

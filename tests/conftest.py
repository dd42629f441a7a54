"""Shared fixtures: the real program, run under the recording mock runner.

Each test gets its own run (`preview=False`, so every apply callback runs), from the dev stack's
config or from a config the test builds on top of it.
"""

import copy
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from gpu_platform.lock.lockfile import LOCK_PATH_VARIABLE
from gpu_platform.offline.analyzer import PACK_DIR, PolicyPack, Verdict
from gpu_platform.offline.namespace_levels import config_for_plan
from gpu_platform.offline.program import Plan, PlannedResource, run_program
from gpu_platform.stack_files import stack_config
from tests.abandoned_work import abandoned_work_ended
from tests.file_order import LongestFileFirst
from tests.repository import PROJECT
from tests.shared_plans import copy_of, kept, shared_plan
from tests.stack_variants import with_gpu_quotas_fitting_its_pools, with_quota_for_any_pool

Config = dict[str, Any]


def dev_stack_config() -> Config:
    """The dev stack's config, fully qualified keys, a copy of its own, its namespace allowed
    GPUs of every kind (`with_quota_for_any_pool`)."""
    return with_quota_for_any_pool(copy.deepcopy(stack_config("dev", PROJECT)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LongestFileFirst | None:
    """`--dist loadfile` (pyproject.toml) hands out the longest files first
    (tests/file_order.py); a run without xdist (`-p no:xdist`) has no such hook."""
    if config.getoption("dist") != "loadfile":
        return None
    return LongestFileFirst(config, log)


@pytest.fixture(autouse=True)
def back_in_the_starting_directory() -> Iterator[None]:
    """`gpu-platform --cwd DIR` enters DIR for good, as a command does: a test that runs it in
    this process would leave every later test of its worker looking for stack files there."""
    start = os.getcwd()
    yield
    os.chdir(start)


@pytest.fixture(autouse=True)
def work_ends_with_its_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test's deadline that passed leaves no work running into the next test of its worker
    (tests/abandoned_work.py). It is waited for after the test's other fixtures closed its
    endpoints, and before its patches (`monkeypatch`, set up first) are undone: the work ends
    against the test's stand-ins, never the real sources."""
    with abandoned_work_ended():
        yield


@pytest.fixture(autouse=True, scope="session")
def moto_without_public_images() -> Iterator[None]:
    """moto's EC2 starts each account with thousands of public AMIs (moto/ec2/models/amis.py,
    `_load_amis`), a third of a preflight test's time; the tests that run an instance register
    the image they run instead."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
        yield


@pytest.fixture(autouse=True, scope="session")
def no_source_positions_for_the_mock_monitor() -> Iterator[None]:
    """Pulumi walks the Python stack of every resource the program constructs, to send the
    engine where in the program it was declared (pulumi 3.272.0 pulumi/runtime/resource.py,
    `_get_stack_trace`, a URI and line for each frame): a tenth of a plan's time, a fifth for
    a large stack, whose components nest deep. The offline plan's monitor records no source
    position (gpu_platform/offline/program.py), so the plans of this process send none; the
    tests that run the command in a fresh process (tests/gpu_platform/cli/test_app.py,
    tests/test_fresh_clone.py) still plan with Pulumi's own."""
    from pulumi.runtime import resource
    from pulumi.runtime.proto import source_pb2

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(resource, "_get_stack_trace", source_pb2.StackTrace)
        yield


@pytest.fixture(autouse=True, scope="session")
def aws_api_models_parsed_once() -> Iterator[None]:
    """Each botocore session parses the API models of the clients it makes from disk again
    (botocore/loaders.py caches per loader, `instance_cache`, and each session makes a loader
    of its own): most of a pre-flight test's setup, which makes its clients on a fresh moto
    account. The API model and its endpoint rules are read, never changed, by the clients of one
    session that share them already (botocore/model.py, botocore/endpoint_provider.py), so all
    sessions share them here. The loader's other data stays each session's own: botocore changes
    some of it in place as it makes a client (botocore/translate.py, `build_retry_config`,
    resolves the retry model's references where it found them), which let an earlier test's
    clients change a later test's retries when whole loaders were shared.

    Each session parses the endpoints of every service in every region as well
    (botocore/data/endpoints.json, over a megabyte; botocore/session.py,
    `create_default_resolver`): a tenth of a second for each of the suite's 200 sessions, over a
    third of the pre-flight tests' time. Its resolver reads them and never changes them
    (botocore/regions.py, `EndpointResolver`, which returns dicts of its own), so all sessions
    share them too."""
    import botocore.loaders

    load = botocore.loaders.Loader.load_service_model
    load_with_path = botocore.loaders.Loader.load_data_with_path
    parsed: dict[tuple[Any, ...], Any] = {}

    def load_service_model(
        self: botocore.loaders.Loader,
        service_name: str,
        type_name: str,
        api_version: str | None = None,
    ) -> Any:
        if type_name not in ("service-2", "endpoint-rule-set-1"):
            return load(self, service_name, type_name, api_version)
        key = (tuple(self.search_paths), service_name, type_name, api_version)
        if key not in parsed:
            parsed[key] = load(self, service_name, type_name, api_version)
        return parsed[key]

    def load_data_with_path(self: botocore.loaders.Loader, name: str) -> Any:
        if name != "endpoints":
            return load_with_path(self, name)
        key = (tuple(self.search_paths), name)
        if key not in parsed:
            parsed[key] = load_with_path(self, name)
        return parsed[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.loaders.Loader, "load_service_model", load_service_model)
        patch.setattr(botocore.loaders.Loader, "load_data_with_path", load_data_with_path)
        yield


@pytest.fixture(autouse=True, scope="session")
def no_project_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Plans read no lock but the one a test writes: the repository's own gpu-platform.lock
    changes with every refresh, and a test's expectations must not."""
    absent = tmp_path_factory.mktemp("lock") / "gpu-platform.lock"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(LOCK_PATH_VARIABLE, str(absent))
        yield


@pytest.fixture
def dev_config() -> Config:
    """The dev stack's config, safe to change in the test."""
    return dev_stack_config()


@pytest.fixture
def gke_config(dev_config: Config) -> Config:
    """A GKE stack on COS with one L4 pool, for tests of the GKE side."""
    return gke_stack_config(dev_config)


def gke_stack_config(dev_config: Config) -> Config:
    """The dev stack's config made a GKE stack on COS with one L4 pool."""
    config = {k: v for k, v in dev_config.items() if not k.startswith("aws:")}
    config["gpu-platform:cloud"] = "gcp"
    config["gpu-platform:cluster"] = {
        "name": "ml-dev",
        "project": "ml-platform-dev",
        "location": "us-central1",
    }
    config["gpu-platform:pools"] = [
        {
            "name": "l4-shared",
            "instanceTypes": ["g2-standard-8"],
            "accelerator": "l4",
            "gpusPerNode": 1,
            "max": 3,
            "capacity": "spot",
            "sharing": {"mode": "time-slicing", "replicas": 4},
        }
    ]
    config["gpu-platform:namespaces"] = [
        {
            "name": "ml-sandbox",
            "gpuQuota": 8,
            "sharedGpuQuota": 8,
            "migQuota": {"1g.10gb": 8},
            "smokeTestPool": "l4-shared",
        }
    ]
    return config


@pytest.fixture
def plan_for(
    request: pytest.FixtureRequest, shared_plan_for: Callable[[Config], Plan]
) -> Callable[[Config], Plan]:
    """Run the program for a config and return what it declared, the namespaces' GPU quotas
    first fitted to the pools a test leaves (`with_gpu_quotas_fitting_its_pools`: `dev_config`
    allows replicas and whole GPUs apart, which a stack with both refuses).

    In a module marked `shared_plans`, whose tests change the program only through the
    stand-ins' answers, it is `shared_plan_for`: its tests plan the same configs again and
    again."""
    if request.node.get_closest_marker("shared_plans") is not None:
        return shared_plan_for

    def run(config: Config) -> Plan:
        fitted = with_gpu_quotas_fitting_its_pools(copy.deepcopy(config))
        return run_program("dev", config=fitted, project=PROJECT)

    return run


@pytest.fixture(scope="session")
def shared_plan_for() -> Callable[[Config], Plan]:
    """`plan_for` that runs the program once per process for each config, and gives each caller
    a deep copy of its own (`tests.shared_plans`): for fixtures that plan the same config in many
    tests. A test that patches the program other than through the stand-ins' answers plans with
    `plan_for`."""
    return lambda config: shared_plan(
        "dev", with_gpu_quotas_fitting_its_pools(copy.deepcopy(config))
    )


@pytest.fixture
def failed_plan_for() -> Callable[[Config], Plan]:
    """Run the program for a config expected to fail; the error is in `Plan.error`."""

    def run(config: Config) -> Plan:
        plan = run_program("dev", config=config, project=PROJECT, raise_errors=False)
        assert plan.error is not None, "the program was expected to fail"
        return plan

    return run


@pytest.fixture(scope="session")
def dev_plan_once() -> Plan:
    """The dev stack planned once per run, for fixtures that only read it: a test reads it
    through `dev_plan`, which gives each test a copy of its own."""
    return shared_plan("dev")


@pytest.fixture(scope="session")
def dev_plan_kept(dev_plan_once: Plan) -> bytes:
    return kept(dev_plan_once)


@pytest.fixture
def dev_plan(dev_plan_kept: bytes) -> Plan:
    """The dev stack's plan, a copy for the test alone (`tests.shared_plans.copy_of`): the
    program runs once per run, as it declares the same resources from the same stack file
    every time."""
    return copy_of(dev_plan_kept)


@pytest.fixture(scope="session")
def policy_pack() -> Iterator[PolicyPack]:
    """The policy pack, started once per test session exactly as the engine starts it: a process
    of its own that takes a second or more to start, which every test configures as it needs."""
    with PolicyPack(PACK_DIR) as pack:
        yield pack


@pytest.fixture
def analyze_plan(policy_pack: PolicyPack) -> Callable[..., list[Verdict]]:
    """`gpu_platform.offline.analyzer.analyze_plan` of the project's pack, on the session's pack
    rather than a new process: the pack configured by `config`, as the offline plan configures
    it (`config_for_plan`), then its verdicts on the resources."""

    def run(
        resources: Sequence[PlannedResource], config: Mapping[str, Any] | None = None
    ) -> list[Verdict]:
        policy_pack.configure(config_for_plan(config, resources))
        return policy_pack.analyze(resources)

    return run

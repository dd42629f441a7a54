"""What the GpuPlatform being declared gives its parts: the providers it was given, however the
options give them, and the prefix of its parts' names."""

import contextvars
from collections.abc import Iterator

import pulumi
import pytest
from pulumi.runtime import mocks
from pulumi.runtime.settings import reset_options

from gpu_platform import instance
from gpu_platform.instance import claim, declaring, given_providers, lookup_provider, part_name


class _Mocks(mocks.Mocks):
    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: mocks.MockCallArgs) -> tuple[dict, list]:
        return {}, []


@pytest.fixture
def providers() -> Iterator[dict[str, pulumi.ProviderResource]]:
    mocks.set_mocks(_Mocks(), "gpu-platform", "test", preview=False)
    yield {
        package: pulumi.ProviderResource(package, f"{package}-explicit")
        for package in ("aws", "gcp", "kubernetes", "random")
    }


def test_the_providers_given_in_a_list_a_mapping_or_alone(
    providers: dict[str, pulumi.ProviderResource],
) -> None:
    aws, gcp, kubernetes = providers["aws"], providers["gcp"], providers["kubernetes"]

    assert given_providers(pulumi.ResourceOptions(providers=[aws, providers["random"]])) == {
        "aws": aws
    }
    assert given_providers(pulumi.ResourceOptions(providers={"gcp": gcp})) == {"gcp": gcp}
    assert given_providers(pulumi.ResourceOptions(provider=kubernetes)) == {
        "kubernetes": kubernetes
    }
    assert given_providers(None) == {}


def test_a_parents_cloud_providers_are_given_unless_the_options_give_their_own(
    providers: dict[str, pulumi.ProviderResource],
) -> None:
    # As a child inherits them (pulumi 3.272 sdk/python/lib/pulumi/resource.py,
    # `Resource.__init__`: "Infer providers and provider maps from parent").
    parent = pulumi.ComponentResource(
        "test:index:Parent",
        "parent",
        opts=pulumi.ResourceOptions(providers=[providers["aws"], providers["kubernetes"]]),
    )
    other = pulumi.ProviderResource("kubernetes", "kubernetes-other")

    assert given_providers(pulumi.ResourceOptions(parent=parent, providers=[other])) == {
        "aws": providers["aws"],
        "kubernetes": other,
    }
    # Never its Kubernetes provider: the parent may be about another cluster, where the
    # platform would install itself.
    assert given_providers(pulumi.ResourceOptions(parent=parent)) == {"aws": providers["aws"]}


def test_while_declaring_lookups_and_names_are_the_platforms(
    providers: dict[str, pulumi.ProviderResource],
) -> None:
    with declaring({"aws": providers["aws"]}, "team-a-"):
        assert (lookup_provider("aws"), lookup_provider("gcp")) == (providers["aws"], None)
        assert part_name("gpu-operator") == "team-a-gpu-operator"

    assert (lookup_provider("aws"), part_name("gpu-operator")) == (None, "gpu-operator")


def _run_with_a_new_monitor(instance: str) -> str | None:
    """A claim made as a program does that starts over a monitor connection of its own: each
    Construct of the component package's provider (pulumi 3.272
    sdk/python/lib/pulumi/provider/server.py, `_construct`), each Automation API run
    (automation/_server.py). In a context of its own, as the SDK's settings are context
    variables: the test's own settings are left as they were."""

    def run() -> str | None:
        reset_options(
            organization="organization",
            project="two-runs",
            stack="dev",
            monitor_address="127.0.0.1:1",
        )
        return claim(("aws", "us-east-1", "ml-dev"), instance)

    return contextvars.copy_context().run(run)


def test_two_constructs_of_the_component_providers_process_claim_a_cluster_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(instance, "_PROCESS_CLAIMS", None)
    instance.claim_per_process()

    assert _run_with_a_new_monitor("team-a") is None
    assert _run_with_a_new_monitor("team-b") == "team-a"
    assert _run_with_a_new_monitor("team-a") is None


def test_a_later_run_in_the_same_process_may_rename_its_platform() -> None:
    # Automation API: one process, a run after another, the instance renamed between them.
    assert _run_with_a_new_monitor("gpu") is None
    assert _run_with_a_new_monitor("gpu-platform") is None

"""What the pre-flight tests share: no `preflight` reaches a real chart repository, every AWS call
it makes is one the pre-flight policy allows, and a network that never answers. Each folder of
pre-flight tests takes them into its conftest.py."""

import copy
import socket
import threading
from collections.abc import Iterator

import pytest

from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.preflight import chart
from gpu_platform.stack_files import stack_config
from tests.preflight_calls import permitted, recorded

# An excerpt of a Helm repository index (`helm repo index` writes this shape).
CHART_INDEX = b"""apiVersion: v1
entries:
  gpu-operator:
  - name: gpu-operator
    version: v26.7.0
    urls: [https://helm.ngc.nvidia.com/nvidia/charts/gpu-operator-v26.7.0.tgz]
  - name: gpu-operator
    version: v25.10.1
    urls: [https://helm.ngc.nvidia.com/nvidia/charts/gpu-operator-v25.10.1.tgz]
  network-operator:
  - name: network-operator
    version: v26.1.0
generated: "2026-11-01T00:00:00Z"
"""


@pytest.fixture
def own_autoscaler_stack() -> StackConfig:
    """The dev stack on a cluster that runs its own cluster autoscaler."""
    values = copy.deepcopy(stack_config("dev"))
    values["gpu-platform:autoscaler"] = {"install": False}
    return load_stack_config(
        {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-")}
    )


@pytest.fixture(autouse=True)
def chart_repository(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The chart index as the repository would serve it; no test reaches a real repository.
    Lists the repositories read."""
    read: list[str] = []

    def index(repository: str, timeout: float) -> bytes:
        read.append(repository)
        return CHART_INDEX

    monkeypatch.setattr(chart, "read_chart_index", index)
    return read


@pytest.fixture(autouse=True)
def calls_the_preflight_policy_allows(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every AWS call the command's code makes in a test is one docs/iam/eks-preflight-policy.json
    allows, on the resource the call names, for a role tagged like a committed EKS stack's."""
    with recorded(monkeypatch) as calls:
        yield
    denied = sorted(f"{c.action} on {c.resource}" for c in calls if not permitted(c))
    assert not denied, f"docs/iam/eks-preflight-policy.json denies: {denied}"


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """`http://127.0.0.1:<port>`: a listener on this machine's loopback that accepts every
    connection and never answers, as a blackholed VPC endpoint or a stalled proxy does. Its
    connections are closed after the test."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    closing = threading.Event()

    def accept() -> None:
        while not closing.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        closing.set()
        thread.join()
        listener.close()
        for connection in held:
            connection.close()

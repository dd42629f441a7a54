"""The pack converts each resource's properties once, not once per policy, and its policies keep
their own levels (conversions.py).

pulumi-policy's servicer converts a resource's properties for every policy that sees it
(pulumi_policy/policy.py, `_PolicyAnalyzerServicer.Analyze` and `AnalyzeStack`). The script
below drives the SDK's own servicer, in the pack's directory as the engine starts it, with three
resource and three stack policies, and counts the conversions."""

import json
import subprocess
import sys

from gpu_platform.offline.analyzer import PACK_DIR
from tests.gpu_platform.policy_pack.builders import (
    Analyze,
    gpu_pod_spec,
    namespace,
    violations,
    workload,
)

SCRIPT = """
import json, sys
sys.path.insert(0, ".")
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy import policy as sdk

conversions_made = []
original = sdk.unknown_checking_proxy
sdk.unknown_checking_proxy = lambda value: conversions_made.append(1) or original(value)
if sys.argv[1] == "shared":
    import conversions
    conversions.share_conversions()

seen = []
# Every props object a policy saw, kept alive: a freed one's id may be the next one's.
kept = []
def saw(*props):
    kept.extend(props)
    seen.append([id(p) for p in props])
policies = [
    *(StackValidationPolicy(f"stack-{i}", "d", lambda args, report: saw(
        *(r.props for r in args.resources))) for i in range(3)),
    *(ResourceValidationPolicy(f"resource-{i}", "d", lambda args, report: saw(args.props))
      for i in range(3)),
]
servicer = sdk._PolicyAnalyzerServicer(
    "pack", "0.0.1", policies, EnforcementLevel.ADVISORY, None, None, None, None, None, None, None
)
stack = analyzer_pb2.AnalyzeStackRequest()
for name in ("a", "b"):
    added = stack.resources.add(urn=name, type="kubernetes:core/v1:Pod", name=name)
    added.properties.update({"metadata": {"name": name}, "spec": {"hostNetwork": True}})
one = analyzer_pb2.AnalyzeRequest(urn="a", type="kubernetes:core/v1:Pod", name="a")
one.properties.update({"metadata": {"name": "a"}, "spec": {"hostNetwork": True}})

counts = []
for serve, request in ((servicer.AnalyzeStack, stack), (servicer.Analyze, one),
                       (servicer.AnalyzeStack, stack)):
    before = len(conversions_made)
    serve(request, None)
    counts.append(len(conversions_made) - before)
print(json.dumps({"conversions": counts, "policies_saw_the_same_props": [
    len({tuple(ids) for ids in seen[:3]}), len({tuple(ids) for ids in seen[3:6]})]}))
"""


def conversions(mode: str) -> dict[str, list[int]]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        cwd=PACK_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return dict(json.loads(done.stdout))


def test_each_resource_is_converted_once() -> None:
    # Two resources seen by three stack policies, then one of them by three resource policies,
    # then the stack again: each resource's properties are converted once in all.
    assert conversions("shared") == {
        "conversions": [2, 0, 0],
        "policies_saw_the_same_props": [1, 1],
    }


def test_the_sdk_alone_converts_them_once_per_policy() -> None:
    # What share_conversions changes, so that this test fails if the SDK changes how it
    # converts and the sharing stops applying.
    assert conversions("sdk") == {
        "conversions": [6, 3, 6],
        "policies_saw_the_same_props": [3, 3],
    }


def test_levels_stay_per_policy_with_shared_conversions(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "registry.example.com/train:latest"
    spec["hostNetwork"] = True
    config = {"pod-security-standards": "advisory", "gpu-pods-pinned-images": "disabled"}

    verdicts = analyze(namespace(), workload("Deployment", spec), config=config)

    # gpu-pods-cuda-known: the stack has no pool to hold the GPU pod to (test_gpu_cuda.py).
    assert [(v.policy_name, v.enforcement_level) for v in violations(verdicts)] == [
        ("pod-security-standards", "advisory"),
        ("gpu-pods-cuda-known", "advisory"),
    ]

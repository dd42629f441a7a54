"""The order in which `--dist loadfile` hands the test files to the workers: longest first.

pytest-xdist hands them out by their number of tests, most first (xdist/scheduler/loadscope.py,
`loadscopereorder`), so a file of a few tests that each take a minute, mypy's above all, came
last, and one worker ran it alone while the others had finished. Handed out by their time
instead, longest first, the workers finish together.
"""

from collections import OrderedDict
from typing import Any

from xdist.scheduler import LoadFileScheduling

SECONDS_PER_TEST = 0.2
"""A test's usual time, for a file not in `SECONDS`."""

SECONDS = {
    # mypy without a cache, as on a fresh clone; a second with one.
    "tests/test_code_quality.py": 90,
    "tests/test_configuration_sweep.py": 36,
    "tests/gpu_platform/cli/test_app.py": 30,
    "tests/gpu_platform/kubernetes/test_alert_rules.py": 30,
    "tests/gpu_platform/eks/preflight/test_checks.py": 30,
    "tests/gpu_platform/eks/test_new_cluster_rerun.py": 30,
    "tests/gpu_platform/cli/test_plan.py": 30,
    "tests/gpu_platform/policy_pack/test_pod_security_upstream.py": 30,
    "tests/test_secrets.py": 30,
    "tests/gpu_platform/eks/test_cluster_autoscaler.py": 25,
    "tests/gpu_platform/cli/test_imports.py": 22,
    "tests/gpu_platform/eks/preflight/test_auto_mode.py": 20,
    "tests/examples/test_own_project.py": 20,
    "tests/test_fresh_clone.py": 16,
    "tests/test_protection.py": 13,
    "tests/gpu_platform/eks/test_efa_invariants.py": 10,
    "tests/gpu_platform/policy_pack/test_props.py": 7,
}
"""Files whose tests take longer than `SECONDS_PER_TEST` each: their time in a whole run on two
cores, rounded."""


def estimated_seconds(path: str, tests: int) -> float:
    return SECONDS.get(path, tests * SECONDS_PER_TEST)


class LongestFileFirst(LoadFileScheduling):
    """`--dist loadfile`, the files handed out longest first (`estimated_seconds`)."""

    def _assign_work_unit(self, node: Any) -> None:
        if not getattr(self, "_ordered", False):
            queue: OrderedDict[str, dict[str, bool]] = self.workqueue
            for path in sorted(queue, key=lambda path: -estimated_seconds(path, len(queue[path]))):
                queue.move_to_end(path)
            self._ordered = True
        super()._assign_work_unit(node)

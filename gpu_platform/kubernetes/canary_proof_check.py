"""Whether the validated canary node this runs on has proven the canary's new release: the canary
gate's proof, a container of the gate's pod beside its `nvidia-smi` check, which waits for this
one's word in a shared directory before it touches the GPU. Shipped in the gate's ConfigMap;
standard library only.

The gate's pod tolerates the validation taint, so it may take a canary node that has just joined
(or, on GKE Ubuntu, whose driver the GPU Operator is upgrading) and is still being validated.
Every `POLL_SECONDS` this reads its Node and the node validator's Events on it:
- passed (`gpu-platform.io/validation=passed`) with `gpu-platform.io/validated-driver` the
  canary's new driver, and `gpu-platform.io/validated-release` its node version where the
  canary pins one (`EXPECTED_RELEASE`): proven. It writes `proven`, and the check and the soak
  run.
- failed: the node's `gpu-platform.io/validation-failed-check` label, or a `NodeValidationFailed`
  Event on this Node (its UID, not only its name, which a deleted node may have had) newer than
  its last `NodeValidationPassed` (a node that Karpenter replaces is
  deleted without the label; a failure before the node was validated again and passed is no
  longer its result, though its Event lasts an hour): the gate
  fails, `pulumi up` with it, naming the check (exit `FAILED_EXIT_CODE`, the reason in the
  container's termination message, which pulumi-kubernetes reports for a failed Job's pod).
- passed with another driver or release (a proof of an earlier release the GPU Operator's
  upgrade has not reached yet), or `exempt` (never validated): it leaves the node after a
  minute (exit `PENDING_EXIT_CODE`, which the Job does not count), and the Job starts another
  pod.
- otherwise, still validating: it waits; the Job's deadline covers validation's worst case.
On SIGTERM (the node drained or deleted) it reads the Node and its Events once more before it
leaves, so that a failure recorded just before the node's deletion still names its check.
"""

import os
import signal
import sys
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path

# The driver check's API connection, and its exit on a node not of the new release yet, which
# the gate's Job does not count.
if __package__:
    from gpu_platform.kubernetes.canary_driver_check import (
        PENDING_EXIT_CODE,
        RETRY_SECONDS,
        Api,
        Object,
    )
else:  # run as a script, beside the driver check in the gate's ConfigMap
    from canary_driver_check import (  # type: ignore[no-redef]
        PENDING_EXIT_CODE,
        RETRY_SECONDS,
        Api,
        Object,
    )

# gpu_platform/kubernetes/node_validation/names.py, which this script cannot import (the pod has
# none of the platform's modules); a test holds the two to each other.
RESULT_LABEL = "gpu-platform.io/validation"
FAILED_CHECK_LABEL = "gpu-platform.io/validation-failed-check"
VALIDATED_DRIVER_LABEL = "gpu-platform.io/validated-driver"
VALIDATED_RELEASE_LABEL = "gpu-platform.io/validated-release"
FAILED_EVENT_REASON = "NodeValidationFailed"
PASSED_EVENT_REASON = "NodeValidationPassed"
PROOF_DIR = Path("/proof")
PROVEN, FAILED, PENDING = "proven", "failed", "pending"
FAILED_EXIT_CODE = 3
POLL_SECONDS = 10
TERMINATION_LOG = Path("/dev/termination-log")


def _labels(node: Object) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def failure(node: Object, events: Sequence[Object]) -> str | None:
    """The failed check of `node` and what the validator said of it; None if it has not failed."""
    labels = _labels(node)
    meta = node.get("metadata") or {}
    name = meta.get("name")
    # Events are read by the node's name, which a new node can share with a deleted one within
    # the API server's event TTL (an EKS node is named after its private IP, which EC2 may give
    # again): only those of this Node object, by its UID, which the validator's Event names
    # (node_validation/report.py, `event`), are its own.
    own = [e for e in events if (e.get("involvedObject") or {}).get("uid") == meta.get("uid")]
    failed = _since_last_pass(own)
    said = str(failed[-1].get("message") or "") if failed else ""
    if labels.get(RESULT_LABEL) == "failed" or failed:
        check = labels.get(FAILED_CHECK_LABEL) or _first_failed(said) or "unknown"
        return f"canary node {name} failed validation check {check}" + (f": {said}" if said else "")
    return None


def _stamp(event: Object) -> str:
    # RFC 3339 in UTC to the second, as the validator writes it (report.event): it sorts as text.
    return str(event.get("lastTimestamp") or "")


def _since_last_pass(events: Sequence[Object]) -> list[Object]:
    """The validator's failure Events on the node newer than its last pass."""
    passed = max((_stamp(e) for e in events if e.get("reason") == PASSED_EVENT_REASON), default="")
    return [e for e in events if e.get("reason") == FAILED_EVENT_REASON and _stamp(e) > passed]


def _first_failed(message: str) -> str | None:
    """The first check the validator's Event message (`check FAILED (…s): reason; …`) says
    failed."""
    for part in message.split("; "):
        words = part.split(" ")
        if len(words) > 1 and words[1] == "FAILED":
            return words[0]
    return None


def verdict(
    node: Object, events: Sequence[Object], driver: str, release: str = ""
) -> tuple[str | None, str]:
    """`PROVEN`, `FAILED`, `PENDING` (leave the node) or None (wait), with the reason."""
    failed = failure(node, events)
    if failed is not None:
        return FAILED, failed
    labels = _labels(node)
    name = (node.get("metadata") or {}).get("name")
    result = labels.get(RESULT_LABEL)
    if result is None:
        return None, f"canary node {name} is being validated"
    if result != "passed":
        return PENDING, f"canary node {name} is {result}, not validated"
    proven = {VALIDATED_DRIVER_LABEL: driver}
    if release:
        proven[VALIDATED_RELEASE_LABEL] = release
    other = {k: labels.get(k) for k, v in proven.items() if labels.get(k) != v}
    if other:
        return PENDING, (
            f"canary node {name} passed validation with {other}, not {proven}: a proof of an"
            " earlier release"
        )
    return PROVEN, f"canary node {name} passed validation with {proven}"


def read(api: Api, namespace: str, node: str) -> tuple[Object, list[Object]]:
    found = api.get(f"/api/v1/nodes/{urllib.parse.quote(node)}")
    query = urllib.parse.urlencode(
        {"fieldSelector": f"involvedObject.kind=Node,involvedObject.name={node}"}
    )
    events = api.get(f"/api/v1/namespaces/{namespace}/events?{query}").get("items") or []
    return found, sorted(events, key=_stamp)


def _say(word: str, reason: str) -> None:
    print(reason, flush=True)
    (PROOF_DIR / word).write_text(reason)


def main() -> int:
    env = os.environ
    node, namespace = env["NODE_NAME"], env["POD_NAMESPACE"]
    driver, release = env["EXPECTED_DRIVER"], env.get("EXPECTED_RELEASE", "")
    api = Api()
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: stopping.append(signum))
    said = ""
    while True:
        try:
            word, reason = verdict(*read(api, namespace, node), driver, release)
        except (OSError, ValueError) as error:
            word, reason = None, f"could not ask the API server: {error}"
        if word == FAILED:
            _say(FAILED, reason)
            TERMINATION_LOG.write_text(reason[:4096])
            return FAILED_EXIT_CODE
        if word == PROVEN:
            _say(PROVEN, reason)
            return 0
        if stopping:
            _say(PENDING, f"{reason}; the pod was stopped")
            return PENDING_EXIT_CODE
        if word == PENDING:
            print(f"{reason}; a new pod tries again", flush=True)
            time.sleep(RETRY_SECONDS)
            _say(PENDING, reason)
            return PENDING_EXIT_CODE
        if reason != said:
            print(reason, flush=True)
            said = reason
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    sys.exit(main())

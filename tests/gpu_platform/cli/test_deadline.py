"""The one deadline of `gpu-platform preflight`: work that outlasts it is given up on, naming
the last call under way; each call's socket timeouts stay within it."""

import threading
import time

import pytest

from gpu_platform.cli.deadline import Call, Calls, Deadline, DeadlinePassed


def test_work_done_by_the_deadline_gives_its_result() -> None:
    assert Deadline(5).run(lambda: "findings") == "findings"


def test_what_the_work_raised_is_raised_to_the_caller() -> None:
    def refused() -> None:
        raise PermissionError("AccessDenied")

    with pytest.raises(PermissionError, match="AccessDenied"):
        Deadline(5).run(refused)


def test_work_past_the_deadline_is_given_up_on_naming_the_call_under_way() -> None:
    calls = Calls()
    never = threading.Event()

    def stuck() -> None:
        calls.sent("eks DescribeCluster", "https://eks.us-east-1.amazonaws.com/clusters/ml-dev")
        never.wait(30)

    started = time.monotonic()
    with pytest.raises(DeadlinePassed) as passed:
        Deadline(1).run(stuck, calls)
    took = time.monotonic() - started
    never.set()

    assert passed.value.call == Call("eks DescribeCluster", "https://eks.us-east-1.amazonaws.com")
    assert 1 <= took < 1.5


def test_a_retry_is_counted_as_an_attempt_of_the_same_call() -> None:
    calls = Calls()
    url = "https://servicequotas.us-east-1.amazonaws.com/"
    calls.sent("service-quotas GetServiceQuota", url)
    calls.answered(throttled=True)
    calls.sent("service-quotas GetServiceQuota", url, attempt=2)
    calls.answered(throttled=False)

    assert calls.last == Call(
        "service-quotas GetServiceQuota",
        "https://servicequotas.us-east-1.amazonaws.com",
        attempts=2,
        throttled=1,
        answered=True,
    )


def test_a_new_call_starts_its_own_count() -> None:
    calls = Calls()
    calls.sent("ec2 DescribeSubnets", "https://ec2.us-east-1.amazonaws.com/")
    calls.answered(throttled=True)
    calls.sent("ec2 DescribeRouteTables", "https://ec2.us-east-1.amazonaws.com/")

    assert calls.last == Call("ec2 DescribeRouteTables", "https://ec2.us-east-1.amazonaws.com")


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (
            Call("eks DescribeCluster", "https://eks.us-east-1.amazonaws.com", attempts=2),
            "https://eks.us-east-1.amazonaws.com did not answer eks DescribeCluster within the"
            " 30 s deadline (2 attempts). Check the network and any proxy (HTTPS_PROXY,"
            " NO_PROXY), or give it longer with --timeout (now 30).",
        ),
        (
            Call(
                "ec2 DescribeInstanceTypeOfferings",
                "https://ec2.us-east-1.amazonaws.com",
                attempts=4,
                throttled=4,
                answered=True,
                last_throttled=True,
            ),
            "AWS throttled ec2 DescribeInstanceTypeOfferings (https://ec2.us-east-1.amazonaws.com)"
            " 4 time(s), and the 30 s deadline passed before it answered. Run it again later, or"
            " give it longer with --timeout (now 30).",
        ),
        (
            Call("looking for Application Default Credentials", ""),
            "the 30 s deadline passed while looking for Application Default Credentials. Check"
            " the network and any proxy (HTTPS_PROXY, NO_PROXY), or give it longer with --timeout"
            " (now 30).",
        ),
        (
            None,
            "AWS did not answer within the 30 s deadline. Check the network and any proxy"
            " (HTTPS_PROXY, NO_PROXY), or give it longer with --timeout (now 30).",
        ),
    ],
    ids=["unanswered", "throttled", "step", "no-call"],
)
def test_the_deadline_says_what_did_not_answer(call: Call | None, said: str) -> None:
    assert DeadlinePassed(30, call).explain("AWS") == said


@pytest.mark.parametrize(
    ("seconds", "timeouts"), [(30, (5, 15)), (10, (5, 10)), (3, (3, 3))], ids=str
)
def test_socket_timeouts_never_exceed_the_deadline(
    seconds: float, timeouts: tuple[float, float]
) -> None:
    deadline = Deadline(seconds)

    assert (deadline.connect_timeout, deadline.read_timeout) == timeouts

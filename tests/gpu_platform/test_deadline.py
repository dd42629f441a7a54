"""The one deadline of `gpu-platform preflight`: work that outlasts it is given up on, naming
the last call under way; each call's socket timeouts stay within it."""

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

import pytest

from gpu_platform.deadline import Call, Calls, Deadline, DeadlinePassed


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


def test_work_that_fails_after_the_deadline_has_passed_is_a_passed_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A busy machine: the waiting thread wakes only after the work's own read timeout (as long
    # as the deadline) has already ended it.
    def late_wait(futures: list[Future[None]], timeout: float) -> tuple[list[Future[None]], list]:
        for future in futures:
            future.exception()  # blocks until the work has ended, whatever the timeout
        return list(futures), []

    monkeypatch.setattr("gpu_platform.deadline.wait", late_wait)

    def times_out() -> None:
        time.sleep(0.2)
        raise TimeoutError("read timed out")

    with pytest.raises(DeadlinePassed):
        Deadline(0.1).run(times_out)


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
            # Answered, after throttling: the time went to calls, not to waiting on this one.
            Call(
                "ec2 DescribeInstances",
                "https://ec2.us-east-1.amazonaws.com",
                attempts=2,
                throttled=1,
                answered=True,
            ),
            "the check ran out of time after 212 call(s) to AWS within the 30 s deadline, each"
            " answered, the last ec2 DescribeInstances (https://ec2.us-east-1.amazonaws.com). Give"
            " it longer with --timeout (now 30).",
        ),
        (
            Call("looking for Application Default Credentials", ""),
            "the 30 s deadline passed while looking for Application Default Credentials. Check"
            " the network and any proxy (HTTPS_PROXY, NO_PROXY), or give it longer with --timeout"
            " (now 30).",
        ),
        (
            Call("loading the AWS clients' API models", "", local=True),
            "the 30 s deadline passed while loading the AWS clients' API models. Give it longer"
            " with --timeout (now 30).",
        ),
        (
            None,
            "AWS did not answer within the 30 s deadline. Check the network and any proxy"
            " (HTTPS_PROXY, NO_PROXY), or give it longer with --timeout (now 30).",
        ),
    ],
    ids=["unanswered", "throttled", "answered", "step", "local-step", "no-call"],
)
def test_the_deadline_says_what_did_not_answer(call: Call | None, said: str) -> None:
    assert DeadlinePassed(30, call, made=212).explain("AWS") == said


def passed_after(calls_made: Callable[[Calls], None]) -> DeadlinePassed:
    """What a 0.5 s deadline says of work that makes `calls_made` and then waits."""
    calls = Calls()
    never = threading.Event()

    def work() -> None:
        calls_made(calls)
        never.wait(30)

    with pytest.raises(DeadlinePassed) as passed:
        Deadline(0.5).run(work, calls)
    never.set()
    return passed.value


def test_calls_answered_until_the_deadline_say_it_ran_out_of_time_not_that_none_answered() -> None:
    def many_quick_calls(calls: Calls) -> None:
        for region in ("us-east-1", "us-east-1", "us-west-2"):
            calls.sent("ec2 DescribeInstances", f"https://ec2.{region}.amazonaws.com/")
            calls.answered(throttled=False)

    assert passed_after(many_quick_calls).explain("AWS") == (
        "the check ran out of time after 3 call(s) to AWS within the 0.5 s deadline, each"
        " answered, the last ec2 DescribeInstances (https://ec2.us-west-2.amazonaws.com). Give it"
        " longer with --timeout (now 0.5)."
    )


def test_a_call_still_unanswered_at_the_deadline_is_named_as_the_one_that_did_not_answer() -> None:
    def answered_then_stuck(calls: Calls) -> None:
        calls.sent("eks DescribeCluster", "https://eks.us-east-1.amazonaws.com/clusters/ml-dev")
        calls.answered(throttled=False)
        calls.sent("ec2 DescribeSubnets", "https://ec2.us-east-1.amazonaws.com/")

    assert passed_after(answered_then_stuck).explain("AWS") == (
        "https://ec2.us-east-1.amazonaws.com did not answer ec2 DescribeSubnets within the 0.5 s"
        " deadline. Check the network and any proxy (HTTPS_PROXY, NO_PROXY), or give it longer"
        " with --timeout (now 0.5)."
    )


@pytest.mark.parametrize(
    ("seconds", "timeouts"), [(30, (5, 15)), (10, (5, 10)), (3, (3, 3))], ids=str
)
def test_socket_timeouts_never_exceed_the_deadline(
    seconds: float, timeouts: tuple[float, float]
) -> None:
    deadline = Deadline(seconds)

    assert (deadline.connect_timeout, deadline.read_timeout) == timeouts

"""One deadline for `gpu-platform preflight`, and which call had not answered when it passed.

A client library's timeouts bound each socket operation, not a check: a server that accepts a
connection and trickles its answer keeps a read going, and credential lookups, retries and
their backoff all come on top. So the calls run in a worker thread, and the command stops
waiting for it at the deadline; the thread, a daemon, is left to its socket timeouts and ends
with the process. What the clients report of their calls as they go (`Calls`) says then which
endpoint did not answer, or which API kept throttling.
"""

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, replace
from typing import TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")

CONNECT_TIMEOUT_SECONDS = 5.0
"""A TCP handshake with a cloud API takes milliseconds; 5 s leaves room for the two SYN
retransmissions Linux makes by then (at 1 s and 3 s), no more."""
READ_TIMEOUT_SECONDS = 15.0
"""The slowest read-only call the checks make (a page of DescribeInstances or of the project's
reservations) answers in a few seconds; 15 s lets a call that got no answer be tried again
within the default 30 s deadline (`gpu-platform preflight --timeout`)."""
MAX_ATTEMPTS = 5
"""Tries of one call, the first included. Backing off from throttling, botocore's standard
retry mode waits a random share of 1, 2, 4 and 8 s between them: 15 s at most, half the default
deadline, unless an answer's `x-amz-retry-after` header asks for longer, which it grants up to
5 s more each time (botocore/retries/standard.py, ExponentialBackoff); urllib3's Retry, for
Google's APIs, 0, 2, 4 and 8 s, or an answer's Retry-After (urllib3/util/retry.py,
get_backoff_time, with backoff_factor 1). The deadline bounds them all."""


@dataclass(frozen=True)
class Call:
    """One call as the client library reported it: which API, at which endpoint, how it went."""

    api: str
    endpoint: str
    """`scheme://host[:port]`, or empty for a step that is not one HTTP call."""
    attempts: int = 1
    throttled: int = 0
    """How many of its answers were throttling."""
    answered: bool = False
    """Whether its last attempt got an answer (the next may still be under way)."""
    last_throttled: bool = False
    """Whether that answer was throttling."""
    local: bool = False
    """A step of the check's own, on this machine, that the network does not hold up."""


class Calls:
    """The check's calls as the worker thread reports them; the command reads the last one when
    the deadline passes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: Call | None = None
        self._made = 0

    @property
    def last(self) -> Call | None:
        with self._lock:
            return self._last

    def so_far(self) -> tuple[Call | None, int]:
        """The last call, and how many calls were made (retries not counted), read together."""
        with self._lock:
            return self._last, self._made

    def step(self, what: str, local: bool = False) -> None:
        """Something the check does before its calls: looking for credentials, which may call
        out, or work on this machine only (`local`)."""
        with self._lock:
            self._last = Call(what, "", local=local)

    def sent(self, api: str, url: str, attempt: int = 1) -> None:
        """An attempt at `api` went to `url`: the first, or a retry of the call before."""
        endpoint = origin(url)
        with self._lock:
            last = self._last
            if attempt > 1 and last is not None and (last.api, last.endpoint) == (api, endpoint):
                self._last = replace(last, attempts=attempt, answered=False)
            else:
                self._last = Call(api, endpoint)
                self._made += 1

    def again(self) -> None:
        """The call under way is sent again: a retry, which the client library made without
        saying where to (urllib3's)."""
        with self._lock:
            if self._last is not None:
                self._last = replace(self._last, attempts=self._last.attempts + 1, answered=False)

    def answered(self, throttled: bool) -> None:
        """The attempt under way got an answer: a throttling one or another."""
        with self._lock:
            if self._last is not None:
                self._last = replace(
                    self._last,
                    answered=True,
                    throttled=self._last.throttled + throttled,
                    last_throttled=throttled,
                )


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class DeadlinePassed(Exception):
    """The deadline passed before the work was done; `call` is the last one made, `made` how
    many were."""

    def __init__(self, seconds: float, call: Call | None, made: int = 0):
        self.seconds = seconds
        self.call = call
        self.made = made
        super().__init__(seconds, call, made)

    def explain(self, cloud: str) -> str:
        """What did not answer, and what to do, for the cloud's checks: a call still waiting
        for its answer, or the calls themselves, each answered, that took longer altogether."""
        deadline = f"the {self.seconds:g} s deadline"
        longer = f"give it longer with --timeout (now {self.seconds:g})"
        call = self.call
        if call is not None and call.answered and not call.last_throttled:
            # The calls run one after another: every one before the last was answered too.
            return (
                f"the check ran out of time after {self.made} call(s) to {cloud} within"
                f" {deadline}, each answered, the last {call.api} ({call.endpoint}). Give it"
                f" longer with --timeout (now {self.seconds:g})."
            )
        if call is not None and call.throttled:
            return (
                f"{cloud} throttled {call.api} ({call.endpoint}) {call.throttled} time(s), and"
                f" {deadline} passed before it answered. Run it again later, or {longer}."
            )
        network = f"Check the network and any proxy (HTTPS_PROXY, NO_PROXY), or {longer}."
        if call is None:
            return f"{cloud} did not answer within {deadline}. {network}"
        if not call.endpoint:
            advice = (
                f"Give it longer with --timeout (now {self.seconds:g})." if call.local else network
            )
            return f"{deadline} passed while {call.api}. {advice}"
        tries = f" ({call.attempts} attempts)" if call.attempts > 1 else ""
        return f"{call.endpoint} did not answer {call.api} within {deadline}{tries}. {network}"


WORKER_THREAD = "preflight-calls"
"""The name of the thread `Deadline.run` runs the work in, by which one still running after its
deadline passed can be told from the process's other threads."""


class Deadline:
    """A time by which the command answers, `seconds` from now."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    @property
    def connect_timeout(self) -> float:
        return min(CONNECT_TIMEOUT_SECONDS, self.seconds)

    @property
    def read_timeout(self) -> float:
        return min(READ_TIMEOUT_SECONDS, self.seconds)

    def run(self, work: Callable[[], T], calls: Calls | None = None) -> T:
        """`work()`'s result, or what it raised; DeadlinePassed, naming the last of `calls`,
        where it has not returned by the deadline."""
        outcome: Future[T] = Future()

        def worker() -> None:
            try:
                outcome.set_result(work())
            except BaseException as error:  # re-raised by the caller, whatever it is
                outcome.set_exception(error)

        threading.Thread(target=worker, name=WORKER_THREAD, daemon=True).start()
        done, _ = wait([outcome], timeout=self.remaining())
        # A call's read timeout is the deadline itself (`read_timeout`): on a busy machine the
        # call's own timeout can end the work just before this thread wakes up to give up on it.
        # Work that failed once the deadline had passed failed because of it.
        late_failure = bool(done) and outcome.exception() is not None and not self.remaining()
        if not done or late_failure:
            raise DeadlinePassed(self.seconds, *(calls.so_far() if calls else (None, 0)))
        return outcome.result()

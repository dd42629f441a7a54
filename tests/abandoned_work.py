"""The work a deadline gave up on ends with the test that gave up on it.

`Deadline.run` stops waiting for its worker thread at the deadline and leaves it running
(gpu_platform/deadline.py): the command exits right after, and the daemon thread with it. A test
process goes on to the next test instead, and the abandoned work with it: its retries back off
through whatever the next test patched (`botocore.endpoint.time`, urllib3's, `time.sleep`), its
calls reach that test's stand-ins, and, once the earlier test's patches are undone, the real
sources. A test that counts backoffs would count the earlier test's too.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gpu_platform.deadline import WORKER_THREAD

ENDS_WITHIN_SECONDS = 15.0
"""How long abandoned work may take to end once its test's endpoints are closed: the retries
left after a closed endpoint fail at once (at most 0.75 s of botocore's non-throttling backoff,
botocore/retries/standard.py, ExponentialBackoff), a read waits out its socket timeout."""


def deadline_workers() -> set[threading.Thread]:
    """The worker threads of `Deadline.run` still running."""
    return {thread for thread in threading.enumerate() if thread.name == WORKER_THREAD}


@contextmanager
def abandoned_work_ended() -> Iterator[None]:
    """On leaving, wait for the work of the deadlines that passed inside to end."""
    before = deadline_workers()
    yield
    for thread in deadline_workers() - before:
        thread.join(ENDS_WITHIN_SECONDS)
        assert not thread.is_alive(), (
            f"work a deadline gave up on still runs {ENDS_WITHIN_SECONDS:g} s after its test: end"
            " what it waits on (close the endpoint, release the stand-in) within the test"
        )

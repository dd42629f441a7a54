"""The work a deadline gave up on ends with its test (tests/abandoned_work.py): a later test of
the same worker counts none of its retries."""

import socket
import time
from types import SimpleNamespace

import boto3
import botocore.endpoint
import pytest
from botocore.config import Config

from gpu_platform.deadline import Deadline, DeadlinePassed
from tests.abandoned_work import abandoned_work_ended, deadline_workers


def test_a_call_given_up_on_at_the_deadline_backs_off_no_more_once_its_test_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An earlier test: a call to an endpoint that takes the connection and never answers, given
    # up on at the deadline, the endpoint closed as the test ends.
    with abandoned_work_ended(), socket.create_server(("127.0.0.1", 0)) as silent:
        client = boto3.Session(
            aws_access_key_id="AKIAEXAMPLE",
            aws_secret_access_key="example",
            region_name="us-east-1",
        ).client(
            "sts",
            endpoint_url=f"http://127.0.0.1:{silent.getsockname()[1]}",
            config=Config(read_timeout=5, retries={"mode": "standard", "total_max_attempts": 5}),
        )
        with pytest.raises(DeadlinePassed):
            Deadline(0.5).run(client.get_caller_identity)

    # The next test counts its own backoffs, as the pre-flight throttling tests do. The
    # abandoned call, its connection reset, would retry at once: standard mode retries a
    # connection error after a random share of 50 ms (botocore/retries/standard.py).
    backoffs: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=backoffs.append))
    given_up = time.monotonic() + 5
    while deadline_workers() and not backoffs and time.monotonic() < given_up:
        time.sleep(0.01)

    assert backoffs == []

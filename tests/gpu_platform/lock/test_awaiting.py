"""The lock refresh drops from a policy config's `awaitingDigests` the images the lock holds a
digest for, so that its pull request passes the test that holds the list to the lock."""

import json
from pathlib import Path

from gpu_platform.lock.awaiting import prune
from gpu_platform.lock.lockfile import IMAGES, Lock, entry

PYTHON = "docker.io/library/python:3.13.9-slim-trixie"
CUDA = "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"


def test_an_image_the_lock_holds_is_no_longer_awaited_and_the_rest_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "prod.json"
    path.write_text(
        '{\n  "all": "mandatory",\n'
        f'  "platform-images-by-digest": {{"awaitingDigests": ["{PYTHON}", "{CUDA}"]}}\n}}\n'
    )
    lock = Lock(path=tmp_path / "lock").with_entries(
        IMAGES, {PYTHON: entry("sha256:" + "ab" * 32, "https://registry.example")}
    )

    assert prune(path, lock) == [PYTHON]
    assert path.read_text() == (
        '{\n  "all": "mandatory",\n'
        f'  "platform-images-by-digest": {{"awaitingDigests": ["{CUDA}"]}}\n}}\n'
    )
    assert json.loads(path.read_text())["all"] == "mandatory"


def test_an_image_whose_entry_holds_no_digest_is_still_awaited(tmp_path: Path) -> None:
    path = tmp_path / "prod.json"
    text = f'{{"platform-images-by-digest": {{"awaitingDigests": ["{CUDA}"]}}}}\n'
    path.write_text(text)
    lock = Lock(path=tmp_path / "lock").with_entries(
        IMAGES, {CUDA: entry(None, "https://registry.example")}
    )

    assert prune(path, lock) == []
    assert path.read_text() == text

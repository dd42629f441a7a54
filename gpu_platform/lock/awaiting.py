"""Drop from the stacks' policy configs the images `awaitingDigests` lets run by tag once the
lock holds their digests: the program then runs them by digest, and an exception left behind
would let a tag through unseen if it ever stopped doing so. The lock refresh workflow runs it
after `gpu-platform lock`, so that its pull request carries both, and the tests that hold the
list to the lock pass on it.

    uv run python -m gpu_platform.lock.awaiting policy-config/*.json
"""

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from gpu_platform.lock.lockfile import IMAGES, Lock, project_lock

_AWAITING = re.compile(r'"awaitingDigests"\s*:\s*\[[^\]]*\]')


def prune(path: Path, lock: Lock) -> list[str]:
    """Rewrite the policy config at `path` without the awaited images `lock` holds a digest
    for, its other lines as they were; the images dropped."""
    text = path.read_text()
    config = json.loads(text)
    awaiting = config.get("platform-images-by-digest", {}).get("awaitingDigests", [])
    # An entry may hold no value (its source read, no such fact): that image runs by tag still.
    held = {key for key, found in lock.section(IMAGES).items() if found.value is not None}
    dropped = [image for image in awaiting if image in held]
    if dropped:
        kept = [image for image in awaiting if image not in dropped]
        path.write_text(_AWAITING.sub(f'"awaitingDigests": {json.dumps(kept)}', text, count=1))
    return dropped


def main(paths: Sequence[str]) -> None:
    lock = project_lock()
    for path in paths:
        for image in prune(Path(path), lock):
            print(f"{path}: {image} is locked by digest now: no longer awaited")


if __name__ == "__main__":
    main(sys.argv[1:])

"""./uvw installs the uv release pyproject.toml pins, by the hashes of its wheels
(uv-requirements.txt), with pip's hash-checking mode ("Secure installs" in pip's user guide:
every file it installs must match a hash given)."""

import re
import tomllib

from tests.repository import ROOT


def test_the_hashed_requirement_is_the_pinned_uv_release() -> None:
    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"][
        "required-version"
    ]
    requirements = (ROOT / "uv-requirements.txt").read_text()

    assert re.search(rf"^uv{re.escape(required)} \\$", requirements, re.MULTILINE)


def test_every_wheel_of_the_release_is_given_by_its_sha256() -> None:
    requirements = (ROOT / "uv-requirements.txt").read_text()

    # Linux glibc x86_64, Linux aarch64 (glibc and musl in one wheel), Linux musl x86_64, macOS
    # x86_64 and arm64.
    assert len(re.findall(r"--hash=sha256:[0-9a-f]{64}", requirements)) == 5


def test_uvw_installs_only_by_hash_and_wheel() -> None:
    script = (ROOT / "uvw").read_text()

    assert '--require-hashes --only-binary=:all: -r "$here/uv-requirements.txt"' in script
    assert '"uv==$version"' not in script

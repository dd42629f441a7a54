"""A real registry on loopback for the image tests of this directory (tests/oci_registry.py)."""

from collections.abc import Iterator

import pytest

from tests.oci_registry import Registry, running_registry


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running

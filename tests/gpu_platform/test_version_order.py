"""Release versions compare by their numbers, wherever the platform compares them
(gpu_platform/version_order.py): as text, 1.33.13 would come before 1.33.9."""

import pytest

from gpu_platform.version_order import version_key


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("1.33.9", "1.33.13"),
        ("1.32.2", "1.32.10"),
        ("1.33.9-20260101", "1.33.13-20251201"),
        ("1.32.2-gke.1652000", "1.32.10-gke.1000"),
        ("1.34.1-gke.999999", "1.34.1-gke.1829001"),
        ("595.91.07", "595.100.01"),
        ("v9.2.0", "v26.7.0"),
        ("1.9", "1.53"),
        ("12.9", "12.10"),
    ],
)
def test_a_version_with_a_larger_number_in_a_part_comes_later(older: str, newer: str) -> None:
    assert version_key(older) < version_key(newer)


def test_the_same_version_compares_equal_with_or_without_a_v() -> None:
    assert version_key("v26.7.0") == version_key("26.7.0")


def test_a_later_build_of_the_same_version_comes_later() -> None:
    assert version_key("1.35.6-20260625") < version_key("1.35.6-20260714")

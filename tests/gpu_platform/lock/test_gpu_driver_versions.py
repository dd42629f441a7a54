"""COS's gpu_driver_versions.textproto, read with the schema of cos/tools
src/pkg/gpuconfig/proto/gpu_driver_versions.proto (as google/gvisor test/gpu copies it)."""

import pytest

from gpu_platform.lock.gpu_driver_versions import UnreadableList, labelled_drivers
from tests.cos_sources import DATA


def test_each_gpu_types_labelled_drivers_are_read() -> None:
    text = (DATA / "18867.199.28.textproto").read_text()

    # The unlabelled 575.57.08 is installed only by its number: no label names it.
    assert labelled_drivers(text) == {
        "NVIDIA_L4": {"DEFAULT": "570.195.03", "LATEST": "580.95.05"},
        "NVIDIA_H100_80GB": {"DEFAULT": "570.195.03"},
    }


def test_the_text_formats_other_spellings_read_the_same() -> None:
    text = (DATA / "19216.220.44.textproto").read_text()

    assert labelled_drivers(text) == {"NVIDIA_L4": {"DEFAULT": "580.126.09", "LATEST": "590.44.01"}}


def test_a_field_the_schema_does_not_know_is_skipped() -> None:
    # The proto leaves room for "more metadata about the driver version".
    text = (
        'gpu_driver_version_info { gpu_device { gpu_type: "NVIDIA_L4" }'
        ' supported_driver_versions { label: "DEFAULT" version: "580.95.05" branch: "R580" } }'
    )

    assert labelled_drivers(text) == {"NVIDIA_L4": {"DEFAULT": "580.95.05"}}


@pytest.mark.parametrize(
    "text",
    [
        "<html><body>Not Found</body></html>",
        '{"gpu_driver_version_info": []}',
        "gpu_driver_version_info { gpu_device { gpu_type: 3 } }",
    ],
)
def test_text_of_another_format_is_refused(text: str) -> None:
    with pytest.raises(UnreadableList):
        labelled_drivers(text)

"""The EC2 data the offline plan answers with is moto's copy of EC2's own, as derived by
`ec2_data/derive.py` from the installed moto, and reading it imports no part of moto."""

import subprocess
import sys

from gpu_platform.offline.stand_ins import aws
from gpu_platform.offline.stand_ins.ec2_data.derive import derived_files, moto_resources


def test_the_committed_files_are_what_derive_writes_from_the_installed_moto() -> None:
    for path, text in derived_files(moto_resources()).items():
        assert path.read_text() == text, (
            f"{path.name} is stale: run `python -m gpu_platform.offline.stand_ins.ec2_data.derive`"
        )


def test_an_instance_type_keeps_its_gpus_as_ec2_describes_them() -> None:
    gpus = aws.ec2_instance_types()["p5.48xlarge"]["GpuInfo"]["Gpus"]

    assert [(g["Manufacturer"], g["Name"], g["Count"]) for g in gpus] == [("NVIDIA", "H100", 8)]


def test_offerings_keep_zones_that_lack_an_instance_type() -> None:
    offered = {zone for name, zone in aws.ec2_zone_offerings("us-east-1") if name == "g4dn.xlarge"}

    # EC2 offers g4dn instances in every us-east-1 zone but the oldest, us-east-1e.
    assert "us-east-1e" in aws.region_zones("us-east-1")
    assert "us-east-1e" not in offered
    assert {"us-east-1a", "us-east-1b"} <= offered


def test_reading_the_data_imports_no_part_of_moto() -> None:
    code = (
        "import sys; from gpu_platform.offline.stand_ins import aws; "
        "aws.ec2_instance_types(); aws.region_zones('us-east-1'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'moto'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "[]"

"""Write the list of metrics the DCGM exporter collects by default, for the tests.

The GPU Operator's exporter reads its metric set from `dcp-metrics-included.csv`
(NVIDIA/dcgm-exporter, `etc/dcp-metrics-included.csv`, shipped in the exporter image at
`/etc/dcgm-exporter/`). Lines starting with `#` are off; `label` fields become labels, not
metrics. Re-run when the pinned GPU Operator moves to another exporter version:

    python derive_dcgm_metrics.py path/to/dcp-metrics-included.csv > dcgm-default-metrics.txt
"""

import csv
import sys


def collected_metrics(lines: list[str]) -> list[str]:
    rows = csv.reader(line for line in lines if line.strip() and not line.startswith("#"))
    return sorted({row[0].strip() for row in rows if row[1].strip() != "label"})


if __name__ == "__main__":
    with open(sys.argv[1]) as csv_file:
        metrics = collected_metrics(csv_file.readlines())
    print("# Derived from dcp-metrics-included.csv by derive_dcgm_metrics.py; do not edit.")
    print("\n".join(metrics))

"""What the GPU alerts are made of, beside the rules file (`gpu-alerts.yaml`) itself:

- `dcgm-metrics.csv`, the metric set the DCGM exporter runs with (every field an alert reads);
- `xid-classes.json`, NVIDIA's XID catalog reduced to the class of each code, written by
  `derive_xid_classes.py` from the catalog's spreadsheet.
"""

import json
from pathlib import Path
from typing import Literal

ALERTS_DIR = Path(__file__).parent
DCGM_METRICS_FILE = ALERTS_DIR / "dcgm-metrics.csv"
XID_CLASSES_FILE = ALERTS_DIR / "xid-classes.json"

XidClass = Literal["application", "reset", "replace", "ignore"]
ALERTED_CLASSES: tuple[XidClass, ...] = ("application", "reset", "replace")
"""The classes with an alert of their own; `ignore` codes raise none, and codes of no class
raise `GpuXidUnclassified`."""


def xid_classes(path: Path = XID_CLASSES_FILE) -> dict[XidClass, list[int]]:
    """The XID codes of each class, ascending; every class present, codes of no class left out."""
    xids = json.loads(path.read_text())["xids"]
    classes: dict[XidClass, list[int]] = {
        name: [] for name in ("application", "reset", "replace", "ignore")
    }
    for code in sorted(xids, key=int):
        if (name := xids[code]["class"]) is not None:
            classes[name].append(int(code))
    return classes

"""Write `xid-classes.json`: NVIDIA's XID catalog, reduced to the class of action each code needs.

NVIDIA publishes, for every XID, the "Resolution Bucket (Immediate Action)" that gets the GPU
back into service, in a spreadsheet linked from
https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html ("download the
spreadsheet"). The spreadsheet is not committed; download it and run

    uv run python -m gpu_platform.kubernetes.alerts.derive_xid_classes Xid-Catalog.xlsx

which rewrites xid-classes.json beside this file, recording the spreadsheet's SHA-256 and
revision date. The revision the committed table comes from (SHA-256 7f70ce96...d5a5, modified
2025-09-30) is also the one NVIDIA's NVSentinel embeds, byte for byte, as
`health-monitors/syslog-health-monitor/pkg/common/Xid-Catalog.xlsx` (its
`common.go` beside it records the same SHA-256): the script run on that file writes the
committed table unchanged. The table keeps, for each code, what its class is derived from (the
immediate-action bucket, whether the code applies to any GPU the catalog covers, and the
subcodes' buckets of XIDs 144-150), so that the tests derive every class again without the
spreadsheet. The alert rules take their XID lists from that file (`monitoring.gpu_alert_rules`),
so the alerts follow the catalog, not anyone's memory of it.

Each bucket maps to one class (`BUCKET_CLASSES`): `application` (the workload restarts; the GPU
is fine), `reset` (drain the node and reset the GPU: in a cloud VM, reboot or replace the node),
`replace` (the hardware is suspect: move off it and tell the provider), or `ignore` (no action).
A bucket the table does not know stops the script: a new bucket needs a decision. A code with no
bucket, or one the catalog says applies to none of its GPUs (its "Unused" rows: codes of V100
and older GPUs, whose bucket is a placeholder), gets no class: `GpuXidUnclassified` asks a
person to look it up rather than guessing.
"""

import hashlib
import json
import re
import zipfile
from collections.abc import Mapping, Sequence
from io import BytesIO
from pathlib import Path
from typing import Annotated, Any
from xml.etree import ElementTree

import typer

from gpu_platform.kubernetes.alerts import XID_CLASSES_FILE, XidClass

CATALOG_PAGE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

# The buckets of the catalog's "Resolution Buckets" sheet (its 2025-09-30 revision), quoted.
BUCKET_CLASSES: Mapping[str, XidClass] = {
    # "The application should be restarted. RESET_GPU or RESTART_BM is not deemed necessary."
    "RESTART_APP": "application",
    # XID 144-150 subcodes: "If an XID 154 is seen along with this error, take that action. If
    # no XID 154 present, RESTART_APP". XID 154 raises no alert by itself (below).
    "XID_154_EVAL": "application",
    # A GPU reset: in a cloud VM, a node reboot or a new node.
    "RESET_GPU": "reset",
    # "Restart bare metal" (XID 79, fallen off the bus) and "VM owning the affected GPU must be
    # restarted" (XID 151): the node restarts, not only the GPU.
    "RESTART_BM": "reset",
    "RESTART_VM": "reset",
    # XID 48 (double-bit ECC): "Solo: RESET_GPU; w/ 63 or 64: DRAIN_AND_RESET".
    "WORKFLOW_XID_48": "reset",
    # XID 74 (NVLink): "A GPU reset or node reboot is needed to clear this error"; the register
    # decode that tells a hardware fault from a sympathetic one needs the kernel log.
    "WORKFLOW_NVLINK_ERR": "reset",
    # XID 159: "If UVM/vGPU is being utilized, RESET_GPU; otherwise IGNORE". CUDA uses UVM.
    "CHECK_UVM": "reset",
    # "Please contact your support organization": in a cloud, the provider; move off the host.
    "CONTACT_SUPPORT": "replace",
    # XID 54: check the device's seating and connections: nobody can in a cloud VM.
    "CHECK_MECHANICALS": "replace",
    # XID 78 (vGPU start): host and guest drivers disagree; this node cannot run the GPU.
    "UPDATE_SWFW": "replace",
    # "No Action required."
    "IGNORE": "ignore",
    # XID 45, preemptive cleanup: "Solo: RESTART_FM; Not Solo: IGNORE (follow guidance in
    # other Xid)". It follows another XID (94, 62, ...) that has a class of its own.
    "WORKFLOW_XID_45": "ignore",
    # XID 154, GPU recovery action changed: "informational only ... always expected to be seen
    # with another Xid requiring a recovery action", which alerts by its own class.
    "XID_154": "ignore",
}
# XIDs 144-150 (NVLink5) need their message's subcodes decoded, which the exporter does not
# report: such a code takes the most severe class any of its subcodes calls for.
DECODE_BUCKET = "WORKFLOW_NVLINK5_ERR"
_SEVERITY: tuple[XidClass, ...] = ("ignore", "application", "reset", "replace")

_XIDS_SHEET = "Xids"
_DECODE_SHEET = "Xid 144-150 Decode"
_CODE = "Code"
_MNEMONIC = "Mnemonic"
_BUCKET = "Resolution Bucket (Immediate Action)"
_APPLIES = "Applies to "
_DECODE_XID = "Xid"
_DECODE_BUCKETS = ("Resolution Bucket (Data Center Recovery Action)", "Action 2")

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_MODIFIED = "{http://purl.org/dc/terms/}modified"

Row = Mapping[str, str]


def class_of_bucket(bucket: str) -> XidClass:
    """The class of a resolution bucket; a bucket nobody has decided on raises."""
    if bucket not in BUCKET_CLASSES:
        raise ValueError(f"resolution bucket {bucket!r} has no class: add it to BUCKET_CLASSES")
    return BUCKET_CLASSES[bucket]


def most_severe(classes: Sequence[XidClass]) -> XidClass:
    return max(classes, key=_SEVERITY.index)


def class_of_entry(bucket: str, applies: bool, decode: Sequence[str] = ()) -> XidClass | None:
    """The class of a catalog code from what the catalog says of it: its immediate-action
    bucket, whether it applies to any GPU the catalog covers, and, for a code whose bucket asks
    for its message to be decoded, the buckets of its subcodes (the most severe wins)."""
    if not bucket or not applies:
        return None
    if bucket == DECODE_BUCKET:
        return most_severe([class_of_bucket(b) for b in decode])
    return class_of_bucket(bucket)


def xid_entries(xid_rows: Sequence[Row], decode_rows: Sequence[Row]) -> dict[int, dict[str, Any]]:
    """Each catalog code's mnemonic, immediate-action bucket, whether it applies to any GPU the
    catalog covers, its subcodes' buckets where it needs decoding, and its class (None: no
    class). The table keeps what the class is derived from, so that a test can derive it again
    without the spreadsheet."""
    decoded: dict[str, set[str]] = {}
    for row in decode_rows:
        buckets = {row.get(column, "") for column in _DECODE_BUCKETS} - {""}
        decoded.setdefault(row[_DECODE_XID], set()).update(buckets)
    entries: dict[int, dict[str, Any]] = {}
    for row in xid_rows:
        bucket = row.get(_BUCKET, "")
        applies = any(row[c].upper() == "YES" for c in row if c.startswith(_APPLIES))
        decode = sorted(decoded.get(row[_CODE], ())) if bucket == DECODE_BUCKET else []
        entries[int(row[_CODE])] = {
            "class": class_of_entry(bucket, applies, decode),
            "bucket": bucket,
            "applies": applies,
            **({"decode": decode} if decode else {}),
            "mnemonic": " ".join(row[_MNEMONIC].split()),
        }
    return entries


def sheet_rows(workbook: zipfile.ZipFile) -> dict[str, list[dict[str, str]]]:
    """Every sheet's rows as {header: value}, headers from its first row with whitespace
    collapsed ("Resolution Bucket \\n(Immediate Action)" becomes one line)."""
    strings = [
        "".join(t.text or "" for t in item.iter(f"{_MAIN}t"))
        for item in _xml(workbook, "xl/sharedStrings.xml").iter(f"{_MAIN}si")
    ]
    targets = {
        rel.get("Id"): rel.get("Target", "") for rel in _xml(workbook, "xl/_rels/workbook.xml.rels")
    }
    sheets: dict[str, list[dict[str, str]]] = {}
    for sheet in _xml(workbook, "xl/workbook.xml").iter(f"{_MAIN}sheet"):
        target = targets[sheet.get(f"{_REL}id")].lstrip("/").removeprefix("xl/")
        rows = [_cells(row, strings) for row in _xml(workbook, f"xl/{target}").iter(f"{_MAIN}row")]
        if rows:
            header = {column: " ".join(text.split()) for column, text in rows[0].items()}
            sheets[sheet.get("name", "")] = [
                {header[c]: v.strip() for c, v in row.items() if c in header} for row in rows[1:]
            ]
    return sheets


def _xml(workbook: zipfile.ZipFile, name: str) -> ElementTree.Element:
    return ElementTree.fromstring(workbook.read(name))


def _cells(row: ElementTree.Element, strings: Sequence[str]) -> dict[str, str]:
    cells = {}
    for cell in row.iter(f"{_MAIN}c"):
        match = re.match(r"[A-Z]+", cell.get("r", ""))
        value = cell.find(f"{_MAIN}v")
        if cell.get("t") == "s" and value is not None:
            text = strings[int(value.text or 0)]
        elif cell.get("t") == "inlineStr":
            text = "".join(t.text or "" for t in cell.iter(f"{_MAIN}t"))
        else:
            text = value.text or "" if value is not None else ""
        if match:
            cells[match.group(0)] = text
    return cells


def derive(catalog: bytes) -> dict[str, Any]:
    """The classes document for a catalog spreadsheet's bytes."""
    with zipfile.ZipFile(BytesIO(catalog)) as workbook:
        sheets = sheet_rows(workbook)
        modified = _xml(workbook, "docProps/core.xml").findtext(_MODIFIED)
    xid_rows = [row for row in sheets[_XIDS_SHEET] if row.get(_CODE, "").isdigit()]
    return {
        "catalog": {
            "page": CATALOG_PAGE,
            "sha256": hashlib.sha256(catalog).hexdigest(),
            "modified": modified,
        },
        "xids": xid_entries(xid_rows, sheets[_DECODE_SHEET]),
    }


def to_json(document: Mapping[str, Any]) -> str:
    """The document with one XID per line, for diffs that show which codes moved."""
    xids = ",\n".join(
        f"    {json.dumps(str(code))}: {json.dumps(entry)}"
        for code, entry in sorted(document["xids"].items())
    )
    catalog = json.dumps(document["catalog"], indent=2).replace("\n", "\n  ")
    return f'{{\n  "catalog": {catalog},\n  "xids": {{\n{xids}\n  }}\n}}\n'


def main(
    catalog: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="NVIDIA's Xid-Catalog.xlsx")
    ],
    output: Annotated[Path, typer.Option(help="Where to write the classes")] = XID_CLASSES_FILE,
) -> None:
    """Write the XID classes of the catalog spreadsheet."""
    document = derive(catalog.read_bytes())
    output.write_text(to_json(document))
    typer.echo(f"wrote {len(document['xids'])} XIDs to {output}")


if __name__ == "__main__":
    typer.run(main)

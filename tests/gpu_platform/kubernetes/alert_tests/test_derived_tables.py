"""The scripts that derive the alerts' tables from upstream: the XID classes from NVIDIA's XID
catalog spreadsheet, and the field names the DCGM exporter accepts from its and go-dcgm's
sources; and the committed XID table against the rules it derives them by."""

import hashlib
import json
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest

from gpu_platform.kubernetes.alerts import XID_CLASSES_FILE, xid_classes
from gpu_platform.kubernetes.alerts.derive_xid_classes import (
    BUCKET_CLASSES,
    class_of_bucket,
    class_of_entry,
    derive,
    main,
    to_json,
    xid_entries,
)
from tests.gpu_platform.kubernetes.alert_tests.derive_dcgm_fields import (
    exporter_metric_names,
    go_dcgm_field_names,
    known_names,
)

BUCKET = "Resolution Bucket (Immediate Action)"


def xid_row(code: str, bucket: str, applies: str = "YES", mnemonic: str = "M") -> dict[str, str]:
    return {
        "Code": code,
        "Mnemonic": mnemonic,
        "Applies to A100": applies,
        "Applies to H100": "NO",
        BUCKET: bucket,
    }


def decode_row(xid: str, bucket: str, action_2: str = "") -> dict[str, str]:
    return {
        "Xid": xid,
        "Resolution Bucket (Data Center Recovery Action)": bucket,
        "Action 2": action_2,
    }


# --- Buckets to classes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bucket", "xid_class"),
    [
        ("RESTART_APP", "application"),
        ("RESET_GPU", "reset"),
        ("RESTART_BM", "reset"),
        ("WORKFLOW_XID_48", "reset"),
        ("CONTACT_SUPPORT", "replace"),
        ("IGNORE", "ignore"),
        ("WORKFLOW_XID_45", "ignore"),
    ],
)
def test_each_resolution_bucket_has_the_class_of_its_action(bucket: str, xid_class: str) -> None:
    assert class_of_bucket(bucket) == xid_class


def test_a_bucket_nobody_decided_on_stops_the_derivation() -> None:
    with pytest.raises(ValueError, match="'REPLACE_DATACENTER' has no class"):
        class_of_bucket("REPLACE_DATACENTER")


def test_a_code_takes_the_class_of_its_immediate_action() -> None:
    entries = xid_entries([xid_row("94", "RESTART_APP", mnemonic="CONTAINED_ERROR")], [])

    assert entries == {
        94: {
            "class": "application",
            "bucket": "RESTART_APP",
            "applies": True,
            "mnemonic": "CONTAINED_ERROR",
        }
    }


def test_a_code_the_catalog_applies_to_no_gpu_gets_no_class() -> None:
    entries = xid_entries([xid_row("61", "CONTACT_SUPPORT", applies="NO")], [])

    assert entries[61]["class"] is None


def test_a_code_without_a_bucket_gets_no_class() -> None:
    assert xid_entries([xid_row("171", "")], [])[171]["class"] is None


def test_an_nvlink5_code_takes_the_most_severe_class_of_its_subcodes() -> None:
    rows = [xid_row(code, "WORKFLOW_NVLINK5_ERR") for code in ("144", "145", "147")]
    decode = [
        decode_row("144", "IGNORE"),
        decode_row("144", "RESET_GPU"),
        decode_row("145", "XID_154_EVAL"),
        decode_row("145", "IGNORE", action_2="RESET_GPU"),
        decode_row("147", "IGNORE"),
    ]

    classes = {code: entry["class"] for code, entry in xid_entries(rows, decode).items()}

    assert classes == {144: "reset", 145: "reset", 147: "ignore"}


def test_a_mnemonic_split_over_lines_becomes_one_line() -> None:
    row = xid_row("13", "RESTART_APP", mnemonic="GR_EXCEPTION /\nGR_ERROR_SW_NOTIFY")

    assert xid_entries([row], [])[13]["mnemonic"] == "GR_EXCEPTION / GR_ERROR_SW_NOTIFY"


# --- Reading the spreadsheet -----------------------------------------------------------------

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def sheet_xml(rows: list[list[str]], strings: list[str]) -> str:
    cells = "".join(
        f'<row r="{r + 1}">'
        + "".join(
            f'<c r="{chr(65 + c)}{r + 1}" t="s"><v>{strings.index(value)}</v></c>'
            for c, value in enumerate(row)
        )
        + "</row>"
        for r, row in enumerate(rows)
    )
    return f'<worksheet xmlns="{MAIN}"><sheetData>{cells}</sheetData></worksheet>'


def catalog_xlsx(xids: list[list[str]], decode: list[list[str]]) -> bytes:
    """A spreadsheet laid out as NVIDIA's: shared strings, headers over two lines."""
    xids_header = [
        "Type \n(XID)",
        "Code",
        "Mnemonic",
        "Applies to\nA100",
        BUCKET.replace(" (", " \n("),
    ]
    decode_header = ["Xid", "Resolution Bucket \n(Data Center Recovery Action)", "Action 2"]
    rows = {"Xids": [xids_header, *xids], "Xid 144-150 Decode": [decode_header, *decode]}
    strings = sorted({value for sheet in rows.values() for row in sheet for value in row})
    files = {
        "xl/sharedStrings.xml": f'<sst xmlns="{MAIN}">'
        + "".join(f"<si><t>{escape(s)}</t></si>" for s in strings)
        + "</sst>",
        "xl/workbook.xml": f'<workbook xmlns="{MAIN}" xmlns:r="{RELS}"><sheets>'
        + "".join(
            f'<sheet name="{name}" sheetId="{i}" r:id="rId{i}"/>' for i, name in enumerate(rows, 1)
        )
        + "</sheets></workbook>",
        "xl/_rels/workbook.xml.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/'
        'package/2006/relationships">'
        + "".join(
            f'<Relationship Id="rId{i}" Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, len(rows) + 1)
        )
        + "</Relationships>",
        "docProps/core.xml": '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/'
        'package/2006/metadata/core-properties" xmlns:dcterms="http://purl.org/dc/terms/">'
        "<dcterms:modified>2025-09-30T21:15:53Z</dcterms:modified></cp:coreProperties>",
        **{
            f"xl/worksheets/sheet{i}.xml": sheet_xml(sheet, strings)
            for i, sheet in enumerate(rows.values(), 1)
        },
    }
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, text in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2025, 9, 30, 21, 15, 52)), text)
    return buffer.getvalue()


CATALOG = catalog_xlsx(
    [
        ["XID", "13", "GR_EXCEPTION", "YES", "RESTART_APP"],
        ["XID", "79", "FALLEN_OFF_THE_BUS", "YES", "RESTART_BM"],
        ["XID", "149", "NETIR", "YES", "WORKFLOW_NVLINK5_ERR"],
    ],
    [["149", "IGNORE", ""], ["149", "RESET_GPU", ""]],
)


def test_the_spreadsheet_yields_each_codes_class() -> None:
    assert derive(CATALOG)["xids"] == {
        13: {
            "class": "application",
            "bucket": "RESTART_APP",
            "applies": True,
            "mnemonic": "GR_EXCEPTION",
        },
        79: {
            "class": "reset",
            "bucket": "RESTART_BM",
            "applies": True,
            "mnemonic": "FALLEN_OFF_THE_BUS",
        },
        149: {
            "class": "reset",
            "bucket": "WORKFLOW_NVLINK5_ERR",
            "applies": True,
            "decode": ["IGNORE", "RESET_GPU"],
            "mnemonic": "NETIR",
        },
    }


def test_the_table_records_which_spreadsheet_it_came_from() -> None:
    assert derive(CATALOG)["catalog"] == {
        "page": "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
        "sha256": hashlib.sha256(CATALOG).hexdigest(),
        "modified": "2025-09-30T21:15:53Z",
    }


def test_the_script_writes_one_xid_a_line_that_loads_back_as_the_classes(tmp_path: Path) -> None:
    catalog, output = tmp_path / "Xid-Catalog.xlsx", tmp_path / "xid-classes.json"
    catalog.write_bytes(CATALOG)

    main(catalog, output)

    assert output.read_text().splitlines()[7:10] == [
        '    "13": {"class": "application", "bucket": "RESTART_APP", "applies": true,'
        ' "mnemonic": "GR_EXCEPTION"},',
        '    "79": {"class": "reset", "bucket": "RESTART_BM", "applies": true,'
        ' "mnemonic": "FALLEN_OFF_THE_BUS"},',
        '    "149": {"class": "reset", "bucket": "WORKFLOW_NVLINK5_ERR", "applies": true,'
        ' "decode": ["IGNORE", "RESET_GPU"], "mnemonic": "NETIR"}',
    ]
    assert xid_classes(output) == {
        "application": [13],
        "reset": [79, 149],
        "replace": [],
        "ignore": [],
    }


def test_the_json_is_the_document() -> None:
    document = derive(CATALOG)

    loaded = json.loads(to_json(document))

    assert loaded == {**document, "xids": {str(k): v for k, v in document["xids"].items()}}


# --- The committed table -----------------------------------------------------------------------


def committed() -> dict[str, dict[str, Any]]:
    return dict(json.loads(XID_CLASSES_FILE.read_text())["xids"])


def test_the_committed_table_comes_from_nvidias_catalog_of_2025_09_30() -> None:
    assert json.loads(XID_CLASSES_FILE.read_text())["catalog"] == {
        "page": "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
        "sha256": "7f70ce9684be0c9d98a367770341ccc1d8bca4465cebe42dab7e23d57df5d5a5",
        "modified": "2025-09-30T21:15:53Z",
    }


def test_every_committed_class_is_derived_again_from_what_the_catalog_says_of_the_code() -> None:
    # The table keeps each code's immediate-action bucket, whether it applies to a GPU the
    # catalog covers and its subcodes' buckets: a class edited by hand, or a rule changed
    # without re-deriving the table, shows here.
    mismatched = {
        code: entry
        for code, entry in committed().items()
        if class_of_entry(entry["bucket"], entry["applies"], entry.get("decode", []))
        != entry["class"]
    }

    assert mismatched == {}


def test_every_class_the_table_uses_is_a_buckets_decided_class() -> None:
    used = {entry["class"] for entry in committed().values()} - {None}

    assert used <= set(BUCKET_CLASSES.values())


# aws/eks-node-monitoring-agent v1.7.0, monitors/nvidia/dcgm/dcgm_policies.go: the comment on
# `WellKnownXidCodes` gives, for each code the agent sets AcceleratedHardwareReady=False for,
# "its NVIDIA resolution bucket (immediate action)", read from the same catalog by AWS.
NODE_MONITORING_AGENT_BUCKETS = {
    "46": "RESET_GPU",
    "48": "WORKFLOW_XID_48",
    "54": "CHECK_MECHANICALS",
    "62": "RESET_GPU",
    "63": "IGNORE",
    "64": "RESET_GPU",
    "74": "WORKFLOW_NVLINK_ERR",
    "79": "RESTART_BM",
    "95": "RESET_GPU",
    "109": "RESET_GPU",
    "110": "RESET_GPU",
    "119": "RESET_GPU",
    "120": "RESET_GPU",
    "136": "RESET_GPU",
    "140": "RESET_GPU",
    "142": "CONTACT_SUPPORT",
    "143": "RESET_GPU",
    "151": "RESTART_VM",
    "155": "RESET_GPU",
    "156": "RESET_GPU",
    "158": "RESET_GPU",
}


def test_the_committed_buckets_are_those_the_node_monitoring_agent_read_in_the_catalog() -> None:
    table = committed()

    assert {code: table[code]["bucket"] for code in NODE_MONITORING_AGENT_BUCKETS} == (
        NODE_MONITORING_AGENT_BUCKETS
    )


def test_the_committed_table_has_the_catalogs_codes_in_order() -> None:
    assert list(committed()) == [str(code) for code in range(1, 173)]


@pytest.mark.parametrize(
    ("code", "bucket", "xid_class"),
    [
        ("13", "RESTART_APP", "application"),
        ("31", "RESTART_APP", "application"),
        ("43", "IGNORE", "ignore"),
        ("45", "WORKFLOW_XID_45", "ignore"),
        ("48", "WORKFLOW_XID_48", "reset"),
        ("63", "IGNORE", "ignore"),
        ("74", "WORKFLOW_NVLINK_ERR", "reset"),
        ("79", "RESTART_BM", "reset"),
        ("94", "RESTART_APP", "application"),
        ("95", "RESET_GPU", "reset"),
        ("119", "RESET_GPU", "reset"),
    ],
)
def test_the_committed_table_has_the_catalogs_bucket_for_well_known_codes(
    code: str, bucket: str, xid_class: str
) -> None:
    assert (committed()[code]["bucket"], committed()[code]["class"]) == (bucket, xid_class)


# --- Field names the exporter accepts ----------------------------------------------------------

CONST_FIELDS_GO = """
const (
	DCGM_FI_DEV_GPU_TEMP Short = 150
)

var dcgmFields = map[string]Short{
	"DCGM_FI_DEV_GPU_TEMP":               150,
	"DCGM_FI_DEV_ROW_REMAP_FAILED":       395,
}

var legacyDCGMFields = map[string]Short{
	"DCGM_FI_DEV_ROW_REMAP_FAILURE": 395,
	"dcgm_gpu_temp":                 150,
}
"""
EXPORTER_CONST_GO = """
const (
	cpuFieldsStart = 1100
	DCGMExpXIDErrorsCount   = "DCGM_EXP_XID_ERRORS_COUNT"
	DCGMExpXIDErrorsTotal   = "DCGM_EXP_XID_ERRORS_TOTAL"
)
"""


def test_go_dcgm_names_are_its_current_and_legacy_field_names() -> None:
    assert go_dcgm_field_names(CONST_FIELDS_GO) == {
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_ROW_REMAP_FAILED",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "dcgm_gpu_temp",
    }


def test_a_go_dcgm_file_without_the_field_maps_is_refused() -> None:
    with pytest.raises(ValueError, match="no `var dcgmFields"):
        go_dcgm_field_names("package dcgm\n")


def test_the_exporters_own_metrics_are_its_dcgm_exp_constants() -> None:
    assert exporter_metric_names(EXPORTER_CONST_GO) == {
        "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_EXP_XID_ERRORS_TOTAL",
    }


def test_only_names_every_version_knows_are_known() -> None:
    older = CONST_FIELDS_GO.replace('\t"DCGM_FI_DEV_ROW_REMAP_FAILED":       395,\n', "")
    older_exporter = EXPORTER_CONST_GO.replace(
        '\tDCGMExpXIDErrorsTotal   = "DCGM_EXP_XID_ERRORS_TOTAL"\n', ""
    )

    assert known_names([CONST_FIELDS_GO, older], [EXPORTER_CONST_GO, older_exporter]) == [
        "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "dcgm_gpu_temp",
    ]

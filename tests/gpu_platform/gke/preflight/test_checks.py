"""The GKE pre-flight check against fakes of the GKE and Compute Engine REST APIs that can answer
only what the APIs' discovery documents, as google-api-python-client ships them, say: each call
must be one of the documents' GET methods with its declared parameters, and each answer must fit
the method's response schema, so that an answer with a field the API does not have, or a value
of another type, fails the test. Findings are asserted exactly."""

import base64
import copy
import json
import re
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

import jsonschema
import pytest
import requests
import urllib3
import urllib3.util.retry
from google.auth.exceptions import RefreshError
from google.auth.transport.requests import AuthorizedSession
from google.oauth2.credentials import Credentials
from requests.adapters import BaseAdapter, HTTPAdapter
from typer.testing import CliRunner

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.cli.app import app
from gpu_platform.cli.preflight_exit_codes import EXIT_CANNOT_CHECK
from gpu_platform.config import StackConfig, load_stack_config
from gpu_platform.deadline import Calls, Deadline
from gpu_platform.gke.preflight import checks as preflight_gke
from gpu_platform.gke.preflight.checks import GoogleApis
from gpu_platform.lock.lockfile import (
    COS_DRIVERS,
    GKE_COS_IMAGES,
    LOCK_PATH_VARIABLE,
    Lock,
    entry,
)
from gpu_platform.preflight import check
from gpu_platform.preflight.findings import Finding
from gpu_platform.stack_files import stack_config
from tests.repository import ROOT
from tests.stack_variants import (
    GKE_RESERVED_POOL,
    with_gke_capacity_pools,
    with_gpu_quotas_fitting_its_pools,
)

Config = dict[str, Any]
Json = dict[str, Any]
PROJECT = "acme-ml-dev"
"""The gke-dev stack's project."""
RESERVATION = "h100-ml-dev"
"""The reservation of the reserved pool of `with_gke_capacity_pools`, in us-central1-a."""
VERSION = "1.35.2-gke.1485000"
DEADLINE_MARGIN_SECONDS = 2
"""How long past its deadline the command may take to say so: starting and printing."""


# --- The APIs, as their discovery documents describe them ------------------------------------


@dataclass(frozen=True)
class Method:
    """A GET method of a discovery document, or a `getIamPolicy` (a POST that reads)."""

    id: str
    http: str
    """Its HTTP method."""
    url: re.Pattern[str]
    """`rootUrl` + `servicePath` + `path`, each path parameter matched by its `pattern`."""
    query: frozenset[str]
    """The query parameters it takes: its own and the document's global ones."""
    response: str
    """Its response schema's name."""


@dataclass(frozen=True)
class Api:
    name: str
    methods: tuple[Method, ...]
    schemas: Mapping[str, Any]
    """The document's `schemas` as JSON Schema definitions."""


@cache
def api(name: str) -> Api:
    document = json.loads(
        (files("googleapiclient.discovery_cache") / "documents" / f"{name}.json").read_text()
    )
    base = document["rootUrl"] + document["servicePath"]
    methods = tuple(
        Method(
            method["id"],
            method["httpMethod"],
            re.compile(re.escape(base) + _path_pattern(method)),
            frozenset(
                p for p, d in method.get("parameters", {}).items() if d["location"] == "query"
            )
            | frozenset(document["parameters"]),
            method["response"]["$ref"],
        )
        for method in _methods(document["resources"])
        if (method["httpMethod"] == "GET" or method["id"].endswith(".getIamPolicy"))
        and "response" in method
    )
    return Api(name, methods, {n: json_schema(s) for n, s in document["schemas"].items()})


def _methods(resources: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for resource in resources.values():
        yield from resource.get("methods", {}).values()
        yield from _methods(resource.get("resources", {}))


def _path_pattern(method: Mapping[str, Any]) -> str:
    """The method's `path` as a regular expression: `{name}` and `{+name}` (which may span
    segments) held to the parameter's `pattern`, or to one segment where it has none."""

    def parameter(name: str) -> str:
        pattern = method["parameters"][name].get("pattern")
        inner = pattern.removeprefix("^").removesuffix("$") if pattern else "[^/]+"
        return f"(?P<{name}>{inner})"

    # Literal text and parameter names, alternately.
    parts = re.split(r"\{\+?(\w+)\}", method["path"])
    return "".join(parameter(p) if k % 2 else re.escape(p) for k, p in enumerate(parts))


def json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A discovery document's schema as JSON Schema: objects take only the properties they
    declare (or, with `additionalProperties`, values of its schema); int64 values are strings,
    as the document's `type` says."""
    if "$ref" in schema:
        return {"$ref": f"#/definitions/{schema['$ref']}"}
    kind = schema.get("type")
    converted: dict[str, Any] = {}
    if kind != "any":
        converted["type"] = kind
    if "enum" in schema:
        converted["enum"] = schema["enum"]
    if kind == "array":
        converted["items"] = json_schema(schema["items"])
    if kind == "object":
        converted["properties"] = {
            name: json_schema(p) for name, p in schema.get("properties", {}).items()
        }
        extra = schema.get("additionalProperties")
        converted["additionalProperties"] = json_schema(extra) if extra else False
    return converted


@cache
def validator(name: str, schema: str) -> jsonschema.Draft7Validator:
    """A validator of one of the API's schemas, built once: the documents hold hundreds."""
    return jsonschema.Draft7Validator(
        {"$ref": f"#/definitions/{schema}", "definitions": api(name).schemas}
    )


# Errors come in Google's error shape (https://cloud.google.com/apis/design/errors), which the
# discovery documents do not describe; Compute Engine gives `errors[].reason` where GKE gives
# `status`.
def not_found(url: str) -> Json:
    return {"error": {"code": 404, "message": f"Not found: {url}", "status": "NOT_FOUND"}}


def forbidden(message: str, compute: bool) -> Json:
    if compute:
        reason = {"message": message, "domain": "global", "reason": "forbidden"}
        return {"error": {"code": 403, "message": message, "errors": [reason]}}
    return {"error": {"code": 403, "message": message, "status": "PERMISSION_DENIED"}}


WEEKLY_WINDOW: Json = {
    "window": {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T06:00:00Z"},
    "recurrence": "FREQ=WEEKLY;BYDAY=SA",
}
AMPLE = 64
AMPLE_QUOTAS = {
    "PREEMPTIBLE_NVIDIA_L4_GPUS": (AMPLE, 0),
    "PREEMPTIBLE_NVIDIA_H100_GPUS": (AMPLE, 0),
    "NVIDIA_L4_GPUS": (AMPLE, 0),
}


def quota_list(held: Mapping[str, tuple[int, int]]) -> list[Json]:
    return [{"metric": m, "limit": limit, "usage": usage} for m, (limit, usage) in held.items()]


APIS = (
    "container.v1",
    "compute.v1",
    "serviceusage.v1",
    "iam.v1",
    "cloudresourcemanager.v1",
    "binaryauthorization.v1",
)
"""The APIs the check calls, by their discovery documents."""


CLOUD_QUOTAS_INFOS = (
    f"{preflight_gke.CLOUD_QUOTAS_API}projects/{PROJECT}/locations/global/services/"
    "compute.googleapis.com/quotaInfos"
)
# Google's answer where a project has not enabled the Cloud Quotas API (the APIs' error shape,
# https://cloud.google.com/apis/design/errors).
CLOUD_QUOTAS_DISABLED = {
    "error": {
        "code": 403,
        "message": "Cloud Quotas API has not been used in project acme-ml-dev before or it is"
        " disabled.",
        "status": "PERMISSION_DENIED",
    }
}


ENDPOINT = "34.118.0.2"
"""The cluster's Kubernetes API (`Cluster.endpoint`)."""
CA = base64.b64encode(b"CA PEM").decode()


class FakeGoogle(BaseAdapter):
    """A requests transport for the GKE and Compute Engine APIs: each call must be a GET method
    of their discovery documents, with its query parameters; it gets the answer given for that
    method and those parameters, else 404 as Google answers it."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: dict[tuple[str, frozenset[tuple[str, str]]], tuple[int, Json]] = {}
        self.firsts: dict[tuple[str, frozenset[tuple[str, str]]], list[tuple[int, Json]]] = {}
        self.calls: list[str] = []
        self.sent_headers: list[Mapping[str, str | bytes]] = []
        self.timeouts: list[float | tuple[float | None, float | None] | None] = []
        self.quota_infos: tuple[int, Json] = (403, CLOUD_QUOTAS_DISABLED)
        self.kube_paths: list[str] = []

    def answer(self, method_id: str, body: Json, status: int = 200, **params: str) -> None:
        """What the method answers for these parameters (path and query); a success must fit
        the method's response schema."""
        found = [(a, m) for a in map(api, APIS) for m in a.methods]
        api_, method = next((a, m) for a, m in found if m.id == method_id)
        if status == 200:
            validator(api_.name, method.response).validate(body)
        self.answers[(method_id, frozenset(params.items()))] = (status, body)

    def first(self, method_id: str, *answers: tuple[int, Json], **params: str) -> None:
        """The method's first calls with these parameters get `answers` (errors), one each, in
        turn; the calls after them, what `answer` gave."""
        self.firsts[(method_id, frozenset(params.items()))] = list(answers)

    def session(self, session: requests.Session | None = None) -> requests.Session:
        """`session` (a plain one by default) with its HTTPS calls sent here."""
        session = session or requests.Session()
        session.mount("https://", self)
        return session

    def send(  # the arguments requests passes every transport
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float | None, float | None] | None = None,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        proxies: dict[str, str] | None = None,
    ) -> requests.Response:
        url = str(request.url)
        self.timeouts.append(timeout)
        status, body = self.respond(str(request.method), url, request.headers)
        response = requests.Response()
        response.status_code, response.url, response.request = status, url, request
        response._content = json.dumps(body).encode()
        return response

    def respond(
        self, method: str, url: str, headers: Mapping[str, str | bytes]
    ) -> tuple[int, Json]:
        """The status and body the APIs answer `method url` with."""
        parts = urlsplit(url)
        if url.startswith(CLOUD_QUOTAS_INFOS):
            # No discovery document of Cloud Quotas ships with google-api-python-client: its
            # answer is the REST reference's ListQuotaInfosResponse, given whole by the test.
            self.calls.append("cloudquotas.projects.locations.services.quotaInfos.list")
            return self.quota_infos
        if parts.netloc == ENDPOINT:
            # The cluster's Kubernetes API: no tenant namespace created yet.
            self.kube_paths.append(parts.path)
            return 404, {"kind": "Status", "code": 404}
        address = f"{parts.scheme}://{parts.netloc}{parts.path}"
        routes = [
            (m, match)
            for name in APIS
            for m in api(name).methods
            if m.http == method and (match := m.url.fullmatch(address))
        ]
        assert len(routes) == 1, f"{method} {url} is not one read method of the APIs: {routes}"
        ((found, match),) = routes
        query = dict(parse_qsl(parts.query))
        assert set(query) <= found.query, f"{found.id} takes no {set(query) - found.query}"
        params = {k: unquote(v) for k, v in match.groupdict().items()} | query
        self.calls.append(found.id)
        self.sent_headers.append(headers)
        key = (found.id, frozenset(params.items()))
        if self.firsts.get(key):
            return self.firsts[key].pop(0)
        return self.answers.get(key, (404, not_found(url)))

    def close(self) -> None:
        pass

    def cluster(self, **fields: Any) -> None:
        """The cluster, with a weekly maintenance window unless `fields` say otherwise."""
        self.answer(
            "container.projects.locations.clusters.get",
            {
                "name": "ml-dev",
                "location": "us-central1",
                "maintenancePolicy": {"window": {"recurringWindow": WEEKLY_WINDOW}},
                "endpoint": ENDPOINT,
                "masterAuth": {"clusterCaCertificate": CA},
                **fields,
            },
            name=f"projects/{PROJECT}/locations/us-central1/clusters/ml-dev",
        )

    def server_config(self, channels: Mapping[str, Sequence[str]]) -> None:
        """The versions each release channel offers in us-central1, its default the first
        (container.v1 `ServerConfig.channels[]`)."""
        self.answer(
            "container.projects.locations.getServerConfig",
            {
                "channels": [
                    {"channel": name, "defaultVersion": versions[0], "validVersions": versions}
                    for name, versions in channels.items()
                ]
            },
            name=f"projects/{PROJECT}/locations/us-central1",
        )

    def identities(
        self,
        clusters: Sequence[tuple[str, str]] = (("ml-dev", "us-central1"),),
        accounts: Mapping[str, list[Json]] | None = None,
        project_bindings: Sequence[Json] = (),
        missing_zones: Sequence[str] = (),
        page: int = 100,
    ) -> None:
        """The project's clusters (name, location) in every location and the zones that did not
        answer, its service accounts with their policies' bindings (by e-mail), `page` of them
        to a page, and its own policy's bindings."""
        listed: Json = {"clusters": [{"name": n, "location": loc} for n, loc in clusters]}
        if missing_zones:
            listed["missingZones"] = list(missing_zones)
        self.answer(
            "container.projects.locations.clusters.list",
            listed,
            parent=f"projects/{PROJECT}/locations/-",
        )
        accounts = accounts or {}
        emails = list(accounts)
        pages = [emails[i : i + page] for i in range(0, len(emails), page)] or [[]]
        for number, on_page in enumerate(pages):
            # The check asks for IAM's largest page, 100 (iam.v1 `pageSize`), and follows
            # `nextPageToken` until an answer has none.
            body: Json = {"accounts": [{"email": email} for email in on_page]}
            if number + 1 < len(pages):
                body["nextPageToken"] = f"page-{number + 2}"
            token = {"pageToken": f"page-{number + 1}"} if number else {}
            params = {"name": f"projects/{PROJECT}", "pageSize": "100", **token}
            self.answer("iam.projects.serviceAccounts.list", body, 200, **params)
        for email, bindings in accounts.items():
            # Asked for policy version 3, which alone returns conditional bindings.
            params = {
                "resource": f"projects/{PROJECT}/serviceAccounts/{email}",
                "options.requestedPolicyVersion": "3",
            }
            policy = {"version": 3, "bindings": bindings}
            self.answer("iam.projects.serviceAccounts.getIamPolicy", policy, 200, **params)
        self.answer(
            "cloudresourcemanager.projects.getIamPolicy",
            {"version": 3, "bindings": list(project_bindings)},
            resource=PROJECT,
        )

    def quotas(
        self, regional: Mapping[str, tuple[int, int]] | None = None, all_regions: int = AMPLE
    ) -> None:
        """The region's and the project's quotas (`Quota`: metric, limit, usage), by default
        ample for the stack's pools."""
        held = AMPLE_QUOTAS if regional is None else regional
        self.answer(
            "compute.regions.get",
            {"kind": "compute#region", "name": "us-central1", "quotas": quota_list(held)},
            project=PROJECT,
            region="us-central1",
        )
        self.answer(
            "compute.projects.get",
            {
                "kind": "compute#project",
                "name": PROJECT,
                "quotas": quota_list({"GPUS_ALL_REGIONS": (all_regions, 0)}),
            },
            project=PROJECT,
        )

    def reservation(self, zone: str = "us-central1-a", **fields: Any) -> None:
        body = reservation(zone=zone, **fields)
        self.answer(
            "compute.reservations.get", body, project=PROJECT, zone=zone, reservation=body["name"]
        )

    def listed(self, *reservations: Json, page: str = "", next_page: str = "") -> None:
        """The project's reservations as `compute.reservations.aggregatedList` gives them, by
        zone: its first page, or the one `page` names; `next_page` names the page after it."""
        items: dict[str, Json] = {}
        for r in reservations:
            scope = f"zones/{r['zone'].rpartition('/')[2]}"
            items.setdefault(scope, {"reservations": []})["reservations"].append(r)
        body: Json = {"kind": "compute#reservationAggregatedList", "items": items}
        if next_page:
            body["nextPageToken"] = next_page
        method = "compute.reservations.aggregatedList"
        if page:
            self.answer(method, body, project=PROJECT, pageToken=page)
        else:
            self.answer(method, body, project=PROJECT)


def reservation(
    name: str = RESERVATION,
    zone: str = "us-central1-a",
    machine_type: str = "a3-highgpu-8g",
    gpus: tuple[str, int] | None = ("nvidia-h100-80gb", 8),
    count: int = 2,
    in_use: int = 1,
    **fields: Any,
) -> Json:
    """A reservation as `compute.reservations.get` answers it: READY, specifically targeted."""
    properties: Json = {"machineType": machine_type}
    if gpus is not None:
        properties["guestAccelerators"] = [
            {"acceleratorType": gpus[0], "acceleratorCount": gpus[1]}
        ]
    return {
        "kind": "compute#reservation",
        "name": name,
        "zone": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{zone}",
        "status": "READY",
        "specificReservationRequired": True,
        # int64 fields are JSON strings.
        "specificReservation": {
            "count": str(count),
            "inUseCount": str(in_use),
            "instanceProperties": properties,
        },
        **fields,
    }


IMAGE = "cos-125-19216-104-25"
"""The COS image the lock gives VERSION (test data)."""


def lock_of(
    path: Path, drivers: Mapping[str, str | None], versions: Sequence[str] = (VERSION,)
) -> Lock:
    """A lock giving each of `versions` the image IMAGE, and IMAGE the driver of each GPU in
    `drivers`."""
    read = datetime(2026, 12, 1, tzinfo=UTC)
    return (
        Lock(path=path)
        .with_entries(
            GKE_COS_IMAGES, {v: entry(IMAGE, "https://map.test/", read) for v in versions}
        )
        .with_entries(
            COS_DRIVERS,
            {
                f"{IMAGE}/{gpu}": entry(driver, "https://cos-tools.test/textproto", read)
                for gpu, driver in drivers.items()
            },
        )
    )


@pytest.fixture(autouse=True)
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lock with COS's default for every GPU GKE offers on the cluster's VERSION, where the
    plan reads it: the checks but the lock's own see nothing missing."""
    path = tmp_path / "gpu-platform.lock"
    monkeypatch.setenv(LOCK_PATH_VARIABLE, str(path))
    gpus = [name for name, accelerator in ACCELERATORS.items() if accelerator.gke_type]
    lock_of(path, dict.fromkeys(gpus, "580.95.05")).save()
    return path


@pytest.fixture
def google() -> FakeGoogle:
    """A project whose cluster runs GKE 1.35 and whose reserved pool's reservation fits it."""
    fake = FakeGoogle()
    fake.cluster(status="RUNNING", currentMasterVersion=VERSION)
    fake.server_config({c: [VERSION] for c in ("RAPID", "REGULAR", "STABLE", "EXTENDED")})
    fake.reservation()
    fake.listed(reservation())
    fake.quotas()
    fake.identities()
    return fake


# --- The stack -------------------------------------------------------------------------------


def gke_stack(change: Callable[[Config], Any] = lambda c: None) -> Config:
    """The gke-dev stack's config (a spot L4 pool) with the capacity pools of
    `with_gke_capacity_pools`: h100-specific on reservation h100-ml-dev in us-central1-a,
    l4-flex (flex-start) and h100-queued (flex-start and queued), changed by `change`, its
    namespace's GPU quotas then fitting the pools left."""
    values = with_gke_capacity_pools(copy.deepcopy(stack_config("gke-dev")))
    change(values)
    return with_gpu_quotas_fitting_its_pools(values)


def stack(change: Callable[[Config], Any] = lambda c: None) -> StackConfig:
    prefix = "gpu-platform:"
    return load_stack_config(
        {k.removeprefix(prefix): v for k, v in gke_stack(change).items() if k.startswith(prefix)}
    )


def pool(config: Config, name: str) -> dict[str, Any]:
    return next(p for p in config["gpu-platform:pools"] if p["name"] == name)


def findings(google: FakeGoogle, change: Callable[[Config], Any] = lambda c: None) -> list[Finding]:
    return preflight_gke.preflight(stack(change), GoogleApis(google.session(), PROJECT))


def of_pool(found: list[Finding], name: str) -> list[Finding]:
    return [f for f in found if f.subject == f"pool {name}"]


CLUSTER_OK = Finding("ok", "cluster ml-dev", f"RUNNING, GKE {VERSION}.", "Nothing.")
RESERVED = f"pool {GKE_RESERVED_POOL}"
WHERE = "gpu-platform:pools[1].gcp.reservationName"


WINDOW_OK = Finding(
    "ok",
    "cluster ml-dev",
    "GKE upgrades nodes only in the maintenance window (FREQ=WEEKLY;BYDAY=SA).",
    "Nothing.",
)


PROJECT_OWN = Finding(
    "ok",
    f"project {PROJECT}",
    "No other GKE cluster in the project: none shares the cluster's Workload Identity pool.",
    "Nothing.",
)
NO_POOL_GRANTS = Finding(
    "ok",
    f"project {PROJECT}",
    f"No role granted to {PROJECT}.svc.id.goog in the policies of the project and of each of"
    " its service accounts. Grants on the project's other resources (buckets, secrets, keys)"
    " and in other projects were not read.",
    "Nothing.",
)


def test_a_ready_project_blocks_nothing(google: FakeGoogle) -> None:
    assert findings(google) == [
        CLUSTER_OK,
        WINDOW_OK,
        PROJECT_OWN,
        NO_POOL_GRANTS,
        Finding(
            "ok",
            RESERVED,
            "Reservation h100-ml-dev: 2 x a3-highgpu-8g in us-central1-a, 1 free (1 in use, by"
            " the pool's running nodes or other VMs).",
            "Nothing.",
        ),
        Finding(
            "ok", "pool l4-flex", f"The cluster's GKE {VERSION} has gcp.flexStart.", "Nothing."
        ),
        Finding(
            "ok",
            "pool h100-queued",
            f"The cluster's GKE {VERSION} has gcp.flexStart and gcp.queuedProvisioning.",
            "Nothing.",
        ),
        Finding(
            "ok",
            "quota PREEMPTIBLE_NVIDIA_L4_GPUS in us-central1",
            "The quota is 64 GPUs (0 in use); l4-shared, l4-flex need at most 11 at their max.",
            "Nothing.",
        ),
        Finding(
            "ok",
            "quota PREEMPTIBLE_NVIDIA_H100_GPUS in us-central1",
            "The quota is 64 GPUs (0 in use); h100-queued need at most 32 at their max.",
            "Nothing.",
        ),
        Finding(
            "ok",
            "quota GPUS_ALL_REGIONS over all regions",
            "The quota is 64 GPUs (0 in use); l4-shared, l4-flex, h100-queued need at most 43 at"
            " their max.",
            "Nothing.",
        ),
    ]
    # Only the named reservation is read: the project's list is for what that lookup misses.
    assert google.calls == [
        "container.projects.locations.clusters.get",
        "container.projects.locations.clusters.list",
        "iam.projects.serviceAccounts.list",
        "cloudresourcemanager.projects.getIamPolicy",
        "compute.reservations.get",
        "compute.regions.get",
        "compute.projects.get",
    ]


# --- reservation: specific ---------------------------------------------------------------------


def test_a_gke_version_the_lock_lacks_is_a_warning_naming_the_entry(
    google: FakeGoogle, locked: Path
) -> None:
    Lock(path=locked).save()

    assert of_pool(findings(google), "l4-shared") == [
        Finding(
            "warning",
            "pool l4-shared",
            f"GKE {VERSION}, which its nodes run or will run, has no entry in gpu-platform.lock:"
            f' gke_cos_images["{VERSION}"]. The plan and every `pulumi up` stop at it until a'
            " refreshed lock is committed.",
            "Run `gpu-platform lock` and commit gpu-platform.lock (docs/lock.md).",
        )
    ]


def test_a_version_the_channel_may_move_the_cluster_to_that_the_lock_lacks_is_a_warning(
    google: FakeGoogle,
) -> None:
    # A channel auto-upgrades the cluster to the versions it offers (container.v1
    # `ReleaseChannelConfig.validVersions`), newer than the cluster's here: the plan would stop
    # at the first `up` after the move.
    ahead = "1.36.1-gke.1000"
    google.cluster(
        status="RUNNING", currentMasterVersion=VERSION, releaseChannel={"channel": "REGULAR"}
    )
    # The older one offered is no move.
    google.server_config({"REGULAR": [VERSION, ahead, "1.34.1-gke.1829001"]})

    assert [f for f in findings(google) if f.subject.startswith("GKE ")] == [
        Finding(
            "warning",
            f"GKE {ahead}",
            "The cluster's regular channel offers it, and may move the cluster and its pools"
            " l4-shared, h100-specific, l4-flex, h100-queued to it on any day of the maintenance"
            f' window; gpu-platform.lock has no entry gke_cos_images["{ahead}"]: the plan and'
            " every `pulumi up` would stop there.",
            "Merge the refresh's pull request (branch gpu-platform-lock/refresh), or run"
            " `gpu-platform lock` and commit gpu-platform.lock (docs/lock.md).",
        )
    ]


def test_a_stated_branch_that_contradicts_the_locked_default_blocks(google: FakeGoogle) -> None:
    def states_570(c: Config) -> None:
        pool(c, "l4-shared").setdefault("gcp", {})["cosDriverBranch"] = 570

    assert of_pool(findings(google, states_570), "l4-shared") == [
        Finding(
            "blocking",
            "pool l4-shared",
            f"Its gcp.cosDriverBranch is 570, but on GKE {VERSION}, which its nodes run or will"
            " run, COS loads 580.95.05 for its GPU (gpu-platform.lock): Google's installer loads"
            " COS's default whatever the pool states, and the pool's labels would promise a CUDA"
            " its nodes do not run.",
            "Remove gcp.cosDriverBranch, or set it to 580.",
        )
    ]


def test_a_gke_version_whose_cos_offers_no_driver_for_the_gpu_blocks(
    google: FakeGoogle, locked: Path
) -> None:
    lock_of(locked, {"l4": None, "h100-80gb": "580.95.05"}).save()

    assert of_pool(findings(google), "l4-shared") == [
        Finding(
            "blocking",
            "pool l4-shared",
            f"On GKE {VERSION}, which its nodes run or will run: {IMAGE}, the COS image of GKE"
            f" {VERSION}, lists no driver for NVIDIA_L4 (https://cos-tools.test/textproto).",
            "Run the pool on a GKE version whose COS offers a driver for its GPU.",
        )
    ]


def test_a_reservation_of_another_machine_type_blocks(google: FakeGoogle) -> None:
    google.reservation(machine_type="a2-ultragpu-8g", gpus=("nvidia-a100-80gb", 8))

    assert of_pool(findings(google), GKE_RESERVED_POOL) == [
        Finding(
            "blocking",
            RESERVED,
            "Reservation h100-ml-dev does not match the pool's nodes, which cannot consume it:"
            " gpu-platform:pools[1].instanceTypes is ['a3-highgpu-8g'], the reservation's"
            " ['a2-ultragpu-8g']; its VMs have 8 x nvidia-a100-80gb, the pool's nodes 8 x"
            " nvidia-h100-80gb.",
            f"Set the pool's machine type and GPUs to the reservation's, or name another in"
            f" {WHERE}.",
        )
    ]


def on_n1(c: Config) -> None:
    """The reserved pool on N1 machines with one T4 attached to each."""
    pool(c, GKE_RESERVED_POOL).update(
        instanceTypes=["n1-standard-8"], accelerator="t4", gpusPerNode=1
    )


@pytest.mark.parametrize(
    ("gpus", "theirs"),
    [(("nvidia-tesla-v100", 1), "1 x nvidia-tesla-v100"), (None, "no GPU")],
    ids=["other GPUs", "no GPU"],
)
def test_an_n1_reservation_must_hold_the_gpus_attached_to_the_nodes(
    google: FakeGoogle, gpus: tuple[str, int] | None, theirs: str
) -> None:
    google.reservation(machine_type="n1-standard-8", gpus=gpus)

    (finding,) = of_pool(findings(google, on_n1), GKE_RESERVED_POOL)

    assert finding.blocking
    assert finding.message.endswith(
        f"consume it: its VMs have {theirs}, the pool's nodes 1 x nvidia-tesla-t4."
    )


def test_a_reservation_of_an_accelerator_optimized_type_may_leave_its_gpus_unlisted(
    google: FakeGoogle,
) -> None:
    google.reservation(gpus=None)

    assert [f.severity for f in of_pool(findings(google), GKE_RESERVED_POOL)] == ["ok"]


def test_an_accelerator_given_by_its_url_is_known_by_its_name(google: FakeGoogle) -> None:
    url = f"projects/{PROJECT}/zones/us-central1-a/acceleratorTypes/nvidia-h100-80gb"
    google.reservation(gpus=(url, 8))

    assert [f.severity for f in of_pool(findings(google), GKE_RESERVED_POOL)] == ["ok"]


def test_a_reservation_in_another_zone_blocks_naming_its_zone(google: FakeGoogle) -> None:
    google.answers.clear()
    google.identities()
    google.cluster(status="RUNNING", currentMasterVersion=VERSION)
    google.quotas()
    google.listed(reservation(zone="us-central1-b"), reservation(name="other"))

    assert of_pool(findings(google), GKE_RESERVED_POOL) == [
        Finding(
            "blocking",
            RESERVED,
            "Reservation h100-ml-dev is in us-central1-b, not in the pool's zone us-central1-a:"
            " reservations are zonal, and the pool's nodes would never consume it.",
            "Set gpu-platform:pools[1].zones to the reservation's zone.",
        )
    ]


def test_a_reservation_compute_engine_does_not_know_blocks(google: FakeGoogle) -> None:
    google.answers.clear()
    google.identities()
    google.cluster(status="RUNNING", currentMasterVersion=VERSION)
    google.quotas()
    google.listed()

    assert of_pool(findings(google), GKE_RESERVED_POOL) == [
        Finding(
            "blocking",
            RESERVED,
            "Compute Engine knows no reservation h100-ml-dev in project acme-ml-dev.",
            f"Check {WHERE}, or create the reservation before `pulumi up`.",
        )
    ]


def test_a_reservation_being_deleted_blocks(google: FakeGoogle) -> None:
    google.reservation(status="DELETING")

    assert of_pool(findings(google), GKE_RESERVED_POOL) == [
        Finding(
            "blocking",
            RESERVED,
            "Reservation h100-ml-dev is DELETING: no node can consume it.",
            f"Name a READY reservation in {WHERE}.",
        )
    ]


def test_a_reservation_not_yet_ready_is_a_warning_beside_what_it_holds(
    google: FakeGoogle,
) -> None:
    google.reservation(status="CREATING", in_use=0)

    assert of_pool(findings(google), GKE_RESERVED_POOL) == [
        Finding(
            "warning",
            RESERVED,
            "Reservation h100-ml-dev is CREATING, not yet READY (ready for use).",
            "Nothing, unless it stays so (gcloud compute reservations describe h100-ml-dev"
            " --zone us-central1-a).",
        ),
        Finding(
            "ok",
            RESERVED,
            "Reservation h100-ml-dev: 2 x a3-highgpu-8g in us-central1-a, 2 free (0 in use, by"
            " the pool's running nodes or other VMs).",
            "Nothing.",
        ),
    ]


def test_a_reservation_open_to_any_vm_is_a_warning(google: FakeGoogle) -> None:
    google.reservation(specificReservationRequired=False)

    assert of_pool(findings(google), GKE_RESERVED_POOL)[1:] == [
        Finding(
            "warning",
            RESERVED,
            "Reservation h100-ml-dev is open to any VM of the project with its properties"
            " (specificReservationRequired is false): other VMs, and node pools that consume any"
            " reservation, may take its capacity before the pool's nodes do.",
            "Nothing, if it is meant to be shared; otherwise reserve the capacity specifically"
            " targeted (gcloud compute reservations create --require-specific-reservation) and"
            f" name that reservation in {WHERE}.",
        )
    ]


def test_a_reservation_smaller_than_max_is_a_warning(google: FakeGoogle) -> None:
    google.reservation(count=1, in_use=1)

    assert of_pool(findings(google), GKE_RESERVED_POOL) == [
        Finding(
            "warning",
            RESERVED,
            "max (2) is more than reservation h100-ml-dev holds: 1 x a3-highgpu-8g in"
            " us-central1-a, 0 free (1 in use, by the pool's running nodes or other VMs). Past it"
            " the pool does not grow: with reservation specific there is no on-demand fallback,"
            " and pods wait Pending.",
            "Lower gpu-platform:pools[1].max to 1, unless the reservation is to grow.",
        )
    ]


def test_a_reservation_smaller_than_min_blocks(google: FakeGoogle) -> None:
    google.reservation(count=1, in_use=0)

    (finding,) = of_pool(
        findings(google, lambda c: pool(c, GKE_RESERVED_POOL).update(min=2)), GKE_RESERVED_POOL
    )

    assert finding == Finding(
        "blocking",
        RESERVED,
        "min (2) is more than reservation h100-ml-dev holds: 1 x a3-highgpu-8g in us-central1-a,"
        " 1 free (0 in use, by the pool's running nodes or other VMs). GKE starts and keeps min"
        " nodes, all from the reservation.",
        "Lower gpu-platform:pools[1].min to at most 1, or grow the reservation.",
    )


# --- reservation: any --------------------------------------------------------------------------

L4_ANY = "l4-any"


def with_any_pool(c: Config, **changes: Any) -> None:
    """An on-demand G2 pool (one L4 a node) that consumes any matching reservation, in every
    zone of the cluster's region us-central1."""
    c["gpu-platform:pools"].append(
        {
            "name": L4_ANY,
            "instanceTypes": ["g2-standard-8"],
            "max": 4,
            "gcp": {"reservation": "any"},
            **changes,
        }
    )


def l4(name: str, zone: str, count: int, in_use: int, **fields: Any) -> Json:
    """A reservation of G2 VMs with one L4 each, open to any VM unless `fields` say otherwise."""
    fields = {"specificReservationRequired": False, **fields}
    return reservation(name, zone, "g2-standard-8", ("nvidia-l4", 1), count, in_use, **fields)


def test_an_any_pool_is_told_the_free_vms_of_the_reservations_it_may_consume(
    google: FakeGoogle,
) -> None:
    google.listed(
        l4("l4-a", "us-central1-a", 4, 1),
        reservation(),  # another machine type
        l4("l4-east", "us-east1-b", 8, 0),  # another region
        l4("l4-named", "us-central1-c", 2, 0, specificReservationRequired=True),
        l4("l4-new", "us-central1-f", 2, 0, status="CREATING"),
        next_page="page-2",
    )
    google.listed(l4("l4-b", "us-central1-b", 2, 0), page="page-2")

    assert of_pool(findings(google, with_any_pool), L4_ANY) == [
        Finding(
            "ok",
            f"pool {L4_ANY}",
            "Reservations of g2-standard-8 with 1 x nvidia-l4 open to its nodes in the zones of"
            " us-central1: l4-a in us-central1-a, 3 of 4 free; l4-b in us-central1-b, 2 of 2"
            " free. 5 VM(s) free, for any matching VM of the project; past them nodes start on"
            " demand.",
            "Nothing.",
        )
    ]


def test_an_any_pool_counts_only_the_reservations_in_its_zones(google: FakeGoogle) -> None:
    google.listed(l4("l4-a", "us-central1-a", 4, 1), l4("l4-b", "us-central1-b", 2, 0))

    (finding,) = of_pool(
        findings(google, lambda c: with_any_pool(c, zones=["us-central1-b"])), L4_ANY
    )

    assert finding.message.startswith(
        "Reservations of g2-standard-8 with 1 x nvidia-l4 open to its nodes in us-central1-b:"
        " l4-b in us-central1-b, 2 of 2 free. 2 VM(s) free"
    )


def test_an_any_pool_without_a_reservation_open_to_it_runs_on_demand(google: FakeGoogle) -> None:
    google.listed(l4("l4-named", "us-central1-c", 2, 0, specificReservationRequired=True))

    assert of_pool(findings(google, with_any_pool), L4_ANY) == [
        Finding(
            "warning",
            f"pool {L4_ANY}",
            "No READY reservation of g2-standard-8 with 1 x nvidia-l4 in the zones of us-central1"
            " is open to any VM: the pool's nodes start on demand, at on-demand prices. l4-named"
            " match(es), but only VMs that name it consume it: reservation specific with its"
            " reservationName does.",
            "Nothing, if that is meant; otherwise reserve the machine type in one of those zones,"
            " without --require-specific-reservation.",
        )
    ]


# --- The cluster -----------------------------------------------------------------------------


def test_a_cluster_too_old_for_flex_start_blocks_its_pools(google: FakeGoogle) -> None:
    version = "1.32.1-gke.1729000"
    google.cluster(status="RUNNING", currentMasterVersion=version)

    found = findings(google)

    assert found[0] == Finding(
        "blocking",
        "cluster ml-dev",
        f"GKE {version} is Kubernetes 1.32, not one the platform supports (1.33, 1.34, 1.35,"
        " 1.36).",
        "Upgrade the cluster to a supported version.",
    )
    upgrade = (
        "Upgrade the cluster first (gcloud container clusters upgrade ml-dev --location"
        " us-central1 --master --cluster-version VERSION), or turn gcp.flexStart off."
    )
    assert of_pool(found, "l4-flex") == [
        Finding(
            "blocking",
            "pool l4-flex",
            f"The cluster runs GKE {version}: gpu-platform:pools[2].gcp.flexStart needs"
            " 1.32.2-gke.1652000 or later.",
            upgrade,
        )
    ]
    # Queued provisioning alone came with 1.28.3-gke.1098000; the pool also asks for flex-start.
    assert of_pool(found, "h100-queued") == [
        Finding(
            "blocking",
            "pool h100-queued",
            f"The cluster runs GKE {version}: gpu-platform:pools[3].gcp.flexStart needs"
            " 1.32.2-gke.1652000 or later.",
            upgrade,
        )
    ]


def test_a_cluster_gke_does_not_know_blocks_and_the_reservations_are_still_checked(
    google: FakeGoogle,
) -> None:
    google.answers.clear()
    google.identities(clusters=())
    google.reservation()
    google.quotas()

    assert findings(google)[:4] == [
        Finding(
            "blocking",
            "cluster ml-dev",
            "No GKE cluster ml-dev in us-central1 of project acme-ml-dev.",
            "Check gpu-platform:cluster.name, gpu-platform:cluster.location and"
            " gpu-platform:cluster.project, or create the cluster first.",
        ),
        PROJECT_OWN,
        NO_POOL_GRANTS,
        Finding(
            "ok",
            RESERVED,
            "Reservation h100-ml-dev: 2 x a3-highgpu-8g in us-central1-a, 1 free (1 in use, by"
            " the pool's running nodes or other VMs).",
            "Nothing.",
        ),
    ]


def test_a_cluster_that_is_not_running_blocks_with_its_conditions(google: FakeGoogle) -> None:
    google.cluster(
        status="DEGRADED",
        currentMasterVersion=VERSION,
        conditions=[{"code": "GCE_QUOTA_EXCEEDED", "message": "Insufficient quota."}],
    )

    assert findings(google)[0] == Finding(
        "blocking",
        "cluster ml-dev",
        "The cluster is DEGRADED, not RUNNING (Insufficient quota.).",
        "Wait until it is RUNNING; where it is DEGRADED or in ERROR, act on what its conditions"
        " say (gcloud container clusters describe ml-dev --location us-central1).",
    )


def test_a_cluster_gke_is_working_on_is_a_warning(google: FakeGoogle) -> None:
    google.cluster(status="RECONCILING", currentMasterVersion=VERSION)

    assert findings(google)[0].severity == "warning"


# --- The command -------------------------------------------------------------------------------


@pytest.fixture
def command(monkeypatch: pytest.MonkeyPatch, google: FakeGoogle) -> Callable[..., Any]:
    """`gpu-platform preflight gke-dev` on a stack changed by `change`, against `google`."""
    monkeypatch.setattr(
        GoogleApis,
        "with_default_credentials",
        classmethod(lambda cls, project, deadline, calls: GoogleApis(google.session(), project)),
    )

    def run(change: Callable[[Config], Any] = lambda c: None) -> Any:
        monkeypatch.setattr(check, "stack_config", lambda stack: gke_stack(change))
        # Wide, as test_plan.py's: a table cut at a terminal's width splits the words checked.
        return CliRunner().invoke(app, ["preflight", "gke-dev"], env={"COLUMNS": "300"})

    return run


def test_the_command_exits_0_when_nothing_blocks(command: Callable[..., Any]) -> None:
    result = command()

    assert result.exit_code == 0, result.output
    assert "chart gpu-operator v26.7.0" in result.output
    assert result.output.rstrip().endswith("Nothing blocks `pulumi up`.")


def test_the_command_exits_1_on_a_blocking_finding(
    command: Callable[..., Any], google: FakeGoogle
) -> None:
    google.reservation(status="INVALID")

    result = command()

    assert result.exit_code == 1, result.output
    assert result.output.rstrip().endswith("1 blocking finding(s).")


def test_a_reserving_pool_the_program_would_refuse_is_a_bad_stack(
    command: Callable[..., Any], google: FakeGoogle
) -> None:
    result = command(lambda c: pool(c, GKE_RESERVED_POOL).update(instanceTypes=["n2-standard-8"]))

    assert result.exit_code == 2
    assert 'gpu-platform:pools[1].instanceTypes[0]: got "n2-standard-8"' in result.output
    assert google.calls == []


@pytest.mark.parametrize(
    ("refuse", "said"),
    [
        (
            lambda google: google.answer(
                "compute.reservations.get",
                forbidden(
                    f"Required 'compute.reservations.get' permission for 'projects/{PROJECT}"
                    f"/zones/us-central1-a/reservations/{RESERVATION}'",
                    compute=True,
                ),
                status=403,
                project=PROJECT,
                zone="us-central1-a",
                reservation=RESERVATION,
            ),
            "Google Cloud refused compute.reservations.get on"
            f" projects/{PROJECT}/zones/us-central1-a/reservations/{RESERVATION} (403 forbidden:"
            " Required 'compute.reservations.get' permission",
        ),
        (
            lambda google: google.answer(
                "container.projects.locations.clusters.get",
                forbidden("Permission 'container.clusters.get' denied", compute=False),
                status=403,
                name=f"projects/{PROJECT}/locations/us-central1/clusters/ml-dev",
            ),
            "Google Cloud refused container.clusters.get on"
            f" projects/{PROJECT}/locations/us-central1/clusters/ml-dev (403 PERMISSION_DENIED:"
            " Permission 'container.clusters.get' denied).",
        ),
    ],
    ids=["reservation", "cluster"],
)
def test_a_refused_permission_is_named_with_what_the_check_needs(
    command: Callable[..., Any],
    google: FakeGoogle,
    refuse: Callable[[FakeGoogle], None],
    said: str,
) -> None:
    refuse(google)

    result = command()

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert f"Cannot check stack gke-dev: {said}" in result.output
    assert (
        "The check needs, read-only: container.clusters.get, compute.reservations.get,"
        " compute.reservations.list, compute.regions.get, compute.projects.get,"
        " container.clusters.list, iam.serviceAccounts.list, iam.serviceAccounts.getIamPolicy,"
        " resourcemanager.projects.getIamPolicy (roles/container.clusterViewer,"
        " roles/compute.viewer and roles/iam.securityReviewer grant them)." in result.output
    )
    assert "Traceback" not in result.output


def test_without_a_way_to_google_it_says_it_cannot_check(
    command: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing listens on the discard port of this machine's loopback.
    monkeypatch.setattr(preflight_gke, "CONTAINER_API", "http://127.0.0.1:9/v1/")
    monkeypatch.setattr(
        GoogleApis,
        "with_default_credentials",
        classmethod(lambda cls, project, deadline, calls: GoogleApis(requests.Session(), project)),
    )

    result = command()

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert "Cannot check stack gke-dev: Google Cloud could not be reached" in result.output


# --- Throttling, answered over HTTP -----------------------------------------------------------

# Google's answers to a used-up rate quota: 429 RESOURCE_EXHAUSTED, and Compute Engine's 403 with
# reason rateLimitExceeded ("Compute Engine rate quotas").
CLUSTER_GET = "container.projects.locations.clusters.get"
CLUSTER_NAME = f"projects/{PROJECT}/locations/us-central1/clusters/ml-dev"
RESERVATION_GET = "compute.reservations.get"
RESERVATION_PARAMS = {"project": PROJECT, "zone": "us-central1-a", "reservation": RESERVATION}
QUOTA_EXCEEDED = (
    429,
    {
        "error": {
            "code": 429,
            "message": "Quota exceeded for quota metric 'Requests'.",
            "status": "RESOURCE_EXHAUSTED",
        }
    },
)
RATE_LIMIT_EXCEEDED = (
    403,
    {
        "error": {
            "code": 403,
            "message": "Rate Limit Exceeded",
            "errors": [
                {
                    "message": "Rate Limit Exceeded",
                    "domain": "usageLimits",
                    "reason": "rateLimitExceeded",
                }
            ],
        }
    },
)
UNAVAILABLE = (503, {"error": {"code": 503, "message": "Try again.", "status": "UNAVAILABLE"}})


@pytest.fixture
def served(
    google: FakeGoogle, monkeypatch: pytest.MonkeyPatch, no_proxy: None
) -> Iterator[FakeGoogle]:
    """`google` served over HTTP on this machine's loopback, where the APIs' addresses point, to
    `gpu-platform preflight gke-dev` with a token that needs no refresh: each call goes through
    the command's own session, its transport and urllib3's retries, as it would to Google."""
    # Served path prefix -> the API's root, which replaces the prefix.
    roots = {
        "/compute/": "https://compute.googleapis.com/compute/",
        "/iam/": "https://iam.googleapis.com/",
        "/crm/": "https://cloudresourcemanager.googleapis.com/",
        "/": "https://container.googleapis.com/",
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._answer("POST")

        def _answer(self, method: str) -> None:
            prefix, root = next((p, r) for p, r in roots.items() if self.path.startswith(p))
            url = root + self.path.removeprefix(prefix)
            status, body = google.respond(method, url, dict(self.headers))
            content = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    address = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setattr(preflight_gke, "CONTAINER_API", f"{address}/v1/")
    monkeypatch.setattr(preflight_gke, "COMPUTE_API", f"{address}/compute/v1/")
    monkeypatch.setattr(preflight_gke, "IAM_API", f"{address}/iam/v1/")
    monkeypatch.setattr(preflight_gke, "RESOURCE_MANAGER_API", f"{address}/crm/v1/")
    monkeypatch.setattr("google.auth.default", lambda scopes: (Credentials(token="t"), None))
    monkeypatch.setattr(check, "stack_config", lambda stack: gke_stack())
    try:
        yield google
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def backoffs(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits urllib3's retries ask for, recorded instead of slept, so that a test sees the
    backoff without waiting it out."""
    waits: list[float] = []
    monkeypatch.setattr(urllib3.util.retry, "time", SimpleNamespace(sleep=waits.append))
    return waits


class Answered(NamedTuple):
    """A method's answer to calls with these parameters."""

    method: str
    params: dict[str, str]
    answer: tuple[int, Json]


CLUSTER_QUOTA_EXCEEDED = Answered(CLUSTER_GET, {"name": CLUSTER_NAME}, QUOTA_EXCEEDED)
RESERVATION_RATE_LIMITED = Answered(RESERVATION_GET, RESERVATION_PARAMS, RATE_LIMIT_EXCEEDED)


@pytest.mark.parametrize(
    "throttled",
    [
        CLUSTER_QUOTA_EXCEEDED,
        RESERVATION_RATE_LIMITED,
        Answered(CLUSTER_GET, {"name": CLUSTER_NAME}, UNAVAILABLE),
        # getIamPolicy reads with a POST, retried as the GETs are.
        Answered("cloudresourcemanager.projects.getIamPolicy", {"resource": PROJECT}, UNAVAILABLE),
    ],
    ids=["gke-429", "compute-rate-limit", "server-error", "policy-post"],
)
def test_a_throttled_call_is_retried_with_backoff_until_it_is_answered(
    served: FakeGoogle, backoffs: list[float], throttled: Answered
) -> None:
    served.first(throttled.method, throttled.answer, throttled.answer, **throttled.params)

    result = CliRunner().invoke(app, ["preflight", "gke-dev"])

    assert result.exit_code == 0, result.output
    assert served.calls.count(throttled.method) == 3
    # The first retry at once, the second after backoff_factor x 2 s (urllib3 2.x,
    # util/retry.py get_backoff_time: 0 for the first retry, then factor x 2 ** (retries - 1)).
    assert backoffs == [2]


@pytest.mark.parametrize(
    ("throttled", "said"),
    [
        (
            CLUSTER_QUOTA_EXCEEDED,
            f"Google Cloud throttled container.clusters.get on {CLUSTER_NAME} (429"
            " RESOURCE_EXHAUSTED: Quota exceeded for quota metric 'Requests'.)",
        ),
        (
            RESERVATION_RATE_LIMITED,
            "Google Cloud throttled compute.reservations.get on"
            f" projects/{PROJECT}/zones/us-central1-a/reservations/{RESERVATION} (403"
            " rateLimitExceeded: Rate Limit Exceeded)",
        ),
    ],
    ids=["gke-429", "compute-rate-limit"],
)
def test_a_call_throttled_on_every_attempt_ends_in_exit_4_saying_it_was_throttled(
    served: FakeGoogle, backoffs: list[float], throttled: Answered, said: str
) -> None:
    status, body = throttled.answer
    served.answer(throttled.method, body, status=status, **throttled.params)

    result = CliRunner().invoke(app, ["preflight", "gke-dev"])

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert (
        f"Cannot check stack gke-dev: {said} 5 time(s) in 5 attempts, backing off between them:"
        " the project's rate quota for the API is used up, by this check or others, until it"
        " refills at the next minute. Run it again in a minute." in result.output
    )
    assert served.calls.count(throttled.method) == 5
    assert backoffs == [2, 4, 8]


def test_throttling_is_not_waited_out_past_the_deadline(served: FakeGoogle) -> None:
    served.answer(CLUSTER_GET, QUOTA_EXCEEDED[1], status=429, name=CLUSTER_NAME)

    result, took = preflight_within(3)

    # Tries at 0 and 0 s, and after 2 s; the next, 4 s on, would be past the deadline.
    assert result.exit_code == EXIT_CANNOT_CHECK
    assert (
        f"Cannot check stack gke-dev: Google Cloud throttled container.clusters.get on"
        f" {CLUSTER_NAME} (429 RESOURCE_EXHAUSTED: Quota exceeded for quota metric 'Requests'.)"
        " 3 time(s) in 3 attempts" in result.output
    )
    assert served.calls.count(CLUSTER_GET) == 3
    assert took < 3


def test_a_refused_permission_is_not_retried(served: FakeGoogle) -> None:
    refused = forbidden("Required 'compute.reservations.get' permission", compute=True)
    served.answer(RESERVATION_GET, refused, status=403, **RESERVATION_PARAMS)

    result = CliRunner().invoke(app, ["preflight", "gke-dev"])

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert "Google Cloud refused compute.reservations.get" in result.output
    assert served.calls.count(RESERVATION_GET) == 1


def test_the_calls_timeouts_come_from_the_deadline_given(
    served: FakeGoogle, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeouts: list[Any] = []
    send = HTTPAdapter.send

    def recorded(self: HTTPAdapter, request: Any, *args: Any, **kwargs: Any) -> Any:
        timeouts.append(kwargs["timeout"])
        return send(self, request, *args, **kwargs)

    monkeypatch.setattr(HTTPAdapter, "send", recorded)

    CliRunner().invoke(app, ["preflight", "gke-dev", "--timeout", "4"])

    # (connect, read): each the smaller of 5 s and 15 s and the 4 s deadline.
    assert timeouts
    assert set(timeouts) == {(4.0, 4.0)}


def test_each_call_is_given_up_after_its_connect_and_read_timeouts(google: FakeGoogle) -> None:
    GoogleApis(google.session(), PROJECT, (5.0, 15.0)).cluster("us-central1", "ml-dev")

    assert google.timeouts == [(5.0, 15.0)]


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback reached directly, whatever proxy this machine's environment names."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def preflight_within(seconds: int) -> tuple[Any, float]:
    """`gpu-platform preflight gke-dev --timeout <seconds>`, and how long it took."""
    started = time.monotonic()
    result = CliRunner().invoke(app, ["preflight", "gke-dev", "--timeout", str(seconds)])
    return result, time.monotonic() - started


def test_on_a_network_that_never_answers_it_exits_4_by_the_deadline_naming_the_endpoint(
    monkeypatch: pytest.MonkeyPatch, silent_endpoint: str, no_proxy: None
) -> None:
    monkeypatch.setattr(check, "stack_config", lambda stack: gke_stack())
    monkeypatch.setattr(preflight_gke, "CONTAINER_API", f"{silent_endpoint}/v1/")
    monkeypatch.setattr("google.auth.default", lambda scopes: (Credentials(token="t"), None))

    result, took = preflight_within(3)

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert (
        f"Cannot check stack gke-dev: {silent_endpoint} did not answer GET"
        f" /v1/projects/{PROJECT}/locations/us-central1/clusters/ml-dev within the 3 s deadline."
        in result.output
    )
    assert 3 <= took < 3 + DEADLINE_MARGIN_SECONDS


def test_a_token_refresh_that_never_answers_is_held_to_the_deadline_too(
    monkeypatch: pytest.MonkeyPatch, silent_endpoint: str, no_proxy: None
) -> None:
    # A user's Application Default Credentials without a token yet: the first call refreshes it.
    credentials = Credentials(
        token=None,
        refresh_token="1//refresh",
        client_id="client",
        client_secret="secret",
        token_uri=f"{silent_endpoint}/token",
    )
    monkeypatch.setattr(check, "stack_config", lambda stack: gke_stack())
    monkeypatch.setattr("google.auth.default", lambda scopes: (credentials, None))

    result, took = preflight_within(3)

    assert result.exit_code == EXIT_CANNOT_CHECK
    assert (
        f"Cannot check stack gke-dev: {silent_endpoint} did not answer POST /token within the 3 s"
        " deadline." in result.output
    )
    assert 3 <= took < 3 + DEADLINE_MARGIN_SECONDS


def test_without_credentials_the_installed_command_says_it_cannot_check(tmp_path: Path) -> None:
    # No credentials file, no gcloud configuration, and (google-auth's NO_GCE_CHECK) no probe
    # of the metadata server, which would find a Compute Engine machine's own account.
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "NO_GCE_CHECK": "true",
    }
    result = subprocess.run(
        [str(Path(sys.executable).parent / "gpu-platform"), "preflight", "gke-dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )

    assert result.returncode == EXIT_CANNOT_CHECK, result.stderr
    assert "Cannot check stack gke-dev: no Application Default Credentials" in result.stderr
    assert "gcloud auth application-default login" in result.stderr
    assert "Traceback" not in result.stderr


def test_calls_go_through_google_auth_with_the_credentials_token(google: FakeGoogle) -> None:
    session = google.session(AuthorizedSession(Credentials(token="ya29.token")))

    GoogleApis(session, PROJECT).cluster("us-central1", "ml-dev")

    assert google.sent_headers[0]["authorization"] == "Bearer ya29.token"


class FakeKubernetes(BaseAdapter):
    """The cluster's Kubernetes API: ml-sandbox queued, with a Workload not finished; records
    each request with the CA it was checked against and its token."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str, str | bytes]] = []

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        url = str(request.url)
        authorization = request.headers.get("authorization", "")
        self.requests.append((url, Path(kwargs["verify"]).read_text(), authorization))
        labels = {"gpu-platform.io/queue": "default"}
        body: Json = {"metadata": {"name": "ml-sandbox", "labels": labels}}
        if url.endswith("/workloads"):
            admitted = {"conditions": [{"type": "Admitted", "status": "True"}]}
            body = {"items": [{"metadata": {"name": "job-train-1"}, "status": admitted}]}
        response = requests.Response()
        response.status_code, response.url = 200, url
        response._content = json.dumps(body).encode()
        return response

    def close(self) -> None:
        pass


def test_a_namespace_moving_out_of_the_queues_is_read_through_the_clusters_kubernetes_api(
    google: FakeGoogle,
) -> None:
    # Where kubectl reaches the cluster: `Cluster.endpoint`, checked against
    # `masterAuth.clusterCaCertificate` (container.v1), with the credentials' token. The stack
    # (`with_gke_capacity_pools`) has its queues off.
    kubernetes = FakeKubernetes()
    session = google.session(AuthorizedSession(Credentials(token="ya29.token")))
    session.mount(f"https://{ENDPOINT}", kubernetes)

    found = preflight_gke.preflight(stack(), GoogleApis(session, PROJECT))

    (finding,) = [f for f in found if f.subject == "namespace ml-sandbox"]
    assert finding.severity == "warning"
    assert "1 Workload(s) there are not finished: job-train-1." in finding.message
    workloads = "apis/kueue.x-k8s.io/v1beta2/namespaces/ml-sandbox/workloads"
    assert kubernetes.requests == [
        (f"https://{ENDPOINT}/api/v1/namespaces/ml-sandbox", "CA PEM", "Bearer ya29.token"),
        (f"https://{ENDPOINT}/{workloads}", "CA PEM", "Bearer ya29.token"),
    ]


def test_the_credentials_are_asked_for_the_scopes_gkes_own_kubectl_plugin_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `defaultScopes` of kubernetes/cloud-provider-gcp cmd/gke-gcloud-auth-plugin/cred.go:
    # userinfo.email has the cluster know a service account by its e-mail, which RBAC names.
    asked: list[Sequence[str]] = []

    def default(scopes: Sequence[str]) -> Any:
        asked.append(scopes)
        return Credentials(token="t"), None

    monkeypatch.setattr("google.auth.default", default)

    apis = default_apis()

    # The Google APIs' credentials without it: a user's credentials send their scopes with each
    # refresh, all of which the login must have granted (google/oauth2/_client.py,
    # `refresh_grant`, google-auth 2.62.2).
    assert asked == [
        ["https://www.googleapis.com/auth/cloud-platform"],
        [
            "https://www.googleapis.com/auth/cloud-platform",
            "https://www.googleapis.com/auth/userinfo.email",
        ],
    ]
    assert apis.kube_session is not apis.session


def test_a_cluster_without_endpoint_or_ca_is_a_warning_that_its_namespaces_are_unread(
    google: FakeGoogle,
) -> None:
    # container.v1 `Cluster.endpoint` and `masterAuth.clusterCaCertificate`, which kubectl needs.
    google.cluster(status="RUNNING", currentMasterVersion=VERSION, masterAuth={})

    (finding,) = [f for f in findings(google) if f.subject == "tenant namespaces"]

    assert (finding.severity, finding.message) == (
        "warning",
        "Cannot read ml-sandbox through the cluster's Kubernetes API: GKE gives the cluster no"
        " endpoint or no CA certificate. Whether the next up moves them into or out of the"
        " queues is not checked.",
    )
    assert google.kube_paths == []


class UnrenewedCredentials(Credentials):
    """A user's login that did not grant the e-mail scope: Google refuses to renew its token."""

    def refresh(self, request: Any) -> None:
        raise RefreshError("invalid_scope: Bad Request")


def test_credentials_not_renewed_for_the_kubernetes_reads_are_one_warning_and_the_rest_runs(
    google: FakeGoogle,
) -> None:
    # A refresh sends the scopes asked for, userinfo.email included for these reads, which a
    # login with other `--scopes` did not grant (google/oauth2/_client.py `refresh_grant`,
    # google-auth 2.62.2); its RefreshError is no requests.RequestException.
    kube = AuthorizedSession(UnrenewedCredentials(token=None))
    apis = GoogleApis(google.session(), PROJECT, kube_session=kube)

    found = preflight_gke.preflight(stack(), apis)

    assert [(f.severity, f.message) for f in found if f.subject == "tenant namespaces"] == [
        (
            "warning",
            "Cannot read ml-sandbox through the cluster's Kubernetes API: Google did not renew"
            " the credentials' token for it (invalid_scope: Bad Request). Whether the next up"
            " moves them into or out of the queues is not checked.",
        )
    ]
    assert found[-1].subject.startswith("quota ")


def test_the_clusters_api_is_read_once_without_retries_where_it_cannot_be_reached(
    monkeypatch: pytest.MonkeyPatch, google: FakeGoogle
) -> None:
    # Each read the preflight's deadline would otherwise pay for twice (`_DeadlineRetry` tries a
    # failed connection once more), and then again for every namespace.
    monkeypatch.setattr("google.auth.default", lambda scopes: (Credentials(token="t"), None))
    apis = default_apis()
    attempts: list[str] = []

    def refuse(self: urllib3.connection.HTTPSConnection) -> None:
        attempts.append(self.host)
        raise urllib3.exceptions.NewConnectionError(self, "refused")

    monkeypatch.setattr(urllib3.connection.HTTPSConnection, "connect", refuse)
    get = apis.kube({"endpoint": ENDPOINT, "masterAuth": {"clusterCaCertificate": CA}})
    assert get is not None

    with pytest.raises(requests.ConnectionError):
        get("/api/v1/namespaces/ml-sandbox")

    assert attempts == [ENDPOINT]


def default_apis() -> GoogleApis:
    """The APIs as the command reaches them: Application Default Credentials, requests' own
    transport."""
    return GoogleApis.with_default_credentials(PROJECT, Deadline(30), Calls())


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A proxy on this machine's loopback, named by HTTPS_PROXY and HTTP_PROXY, that refuses
    every request; lists the request lines it was sent. The check runs with a token that needs
    no refresh, so that only its own calls reach the network."""
    seen: list[str] = []

    class Refusing(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            seen.append(self.rfile.readline().decode().strip())
            self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    address = f"http://127.0.0.1:{server.server_address[1]}"
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, address)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("google.auth.default", lambda scopes: (Credentials(token="t"), None))
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_apis_are_called_through_the_proxy_https_proxy_names(proxy: list[str]) -> None:
    with pytest.raises(requests.exceptions.ProxyError):
        default_apis().cluster("us-central1", "ml-dev")

    # The request line less its HTTP version, which Python's http.client chooses.
    assert [line.rsplit(" ", 1)[0] for line in proxy] == ["CONNECT container.googleapis.com:443"]


def test_a_host_no_proxy_names_is_called_directly(
    proxy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing listens on the discard port of this machine's loopback.
    monkeypatch.setattr(preflight_gke, "CONTAINER_API", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")

    with pytest.raises(requests.exceptions.ConnectionError) as refused:
        default_apis().cluster("us-central1", "ml-dev")

    assert not isinstance(refused.value, requests.exceptions.ProxyError)
    assert proxy == []


# --- What the check calls --------------------------------------------------------------------

# The IAM permission each method asks of its caller (Compute Engine's, GKE's, IAM's and Resource
# Manager's IAM permission references: an aggregated list needs the resource's `list`
# permission).
PERMISSIONS = {
    "container.projects.locations.clusters.get": "container.clusters.get",
    "container.projects.locations.clusters.list": "container.clusters.list",
    "iam.projects.serviceAccounts.list": "iam.serviceAccounts.list",
    "iam.projects.serviceAccounts.getIamPolicy": "iam.serviceAccounts.getIamPolicy",
    "cloudresourcemanager.projects.getIamPolicy": "resourcemanager.projects.getIamPolicy",
    "compute.reservations.get": "compute.reservations.get",
    "compute.reservations.aggregatedList": "compute.reservations.list",
    "compute.regions.get": "compute.regions.get",
    "compute.projects.get": "compute.projects.get",
}


def documented_permissions() -> set[str]:
    """The permissions the docs say the GKE check needs (docs/deploy.md)."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split("**Pre-flight (GKE).**", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`((?:container|compute|iam|resourcemanager)\.\w+\.\w+)`", section))


def test_the_docs_name_exactly_the_permissions_the_check_calls(google: FakeGoogle) -> None:
    # Every call: the cluster, the project's clusters and a service account's policy, a
    # specific pool's reservation missing from its zone (the project's list is read for it), and
    # an `any` pool.
    google.answers.clear()
    google.identities(accounts={f"ci@{PROJECT}.iam.gserviceaccount.com": []})
    google.cluster(status="RUNNING", currentMasterVersion=VERSION)
    google.quotas()
    google.listed()

    findings(google, with_any_pool)

    called = {PERMISSIONS[method] for method in google.calls}
    assert called == documented_permissions()
    assert called == set(preflight_gke.READ_ONLY_PERMISSIONS)


# --- The fakes themselves ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        reservation(specificReservationCount="2"),  # no such field
        reservation(status="ACTIVE"),  # EC2's word, not one of Compute Engine's
        {**reservation(), "specificReservation": {"count": 2}},  # int64 is a JSON string
    ],
    ids=["unknown field", "unknown status", "int64 as a number"],
)
def test_the_fake_refuses_an_answer_the_api_would_not_give(answer: Json) -> None:
    with pytest.raises(jsonschema.ValidationError):
        FakeGoogle().answer(
            "compute.reservations.get",
            answer,
            project=PROJECT,
            zone="us-central1-a",
            reservation=RESERVATION,
        )


@pytest.mark.parametrize("name", ["container.v1", "compute.v1"])
def test_the_schemas_the_fake_checks_answers_against_are_json_schema(name: str) -> None:
    jsonschema.Draft7Validator.check_schema({"definitions": api(name).schemas})


def test_the_fake_refuses_a_call_the_api_does_not_have() -> None:
    with pytest.raises(AssertionError, match="not one read method"):
        FakeGoogle().session().get(f"https://compute.googleapis.com/compute/v1/{PROJECT}/nothing")


# --- A reservation another project shares ------------------------------------------------------

OWNER = "acme-capacity"
SHARED = f"projects/{OWNER}/reservations/h100-central"


def on_shared_reservation(config: Config) -> None:
    pool(config, GKE_RESERVED_POOL)["gcp"]["reservationName"] = SHARED


def shared_reservation(google: FakeGoogle, status: int = 200, **fields: Any) -> None:
    """The owner project's reservation h100-central in us-central1-a, shared with the cluster's
    project unless `fields` say otherwise; or Google's 403 to reading it."""
    body = (
        forbidden("Required 'compute.reservations.get' permission", compute=True)
        if status == 403
        else reservation(
            name="h100-central",
            **{
                "shareSettings": {
                    "shareType": "SPECIFIC_PROJECTS",
                    "projectMap": {PROJECT: {"projectId": PROJECT}},
                },
                **fields,
            },
        )
    )
    google.answer(
        "compute.reservations.get",
        body,
        status=status,
        project=OWNER,
        zone="us-central1-a",
        reservation="h100-central",
    )


def test_a_shared_reservations_name_is_one_compute_engine_takes() -> None:
    # compute.v1.json `ReservationAffinity.values`: "projects/different-project/reservations/
    # some-reservation-name" targets a shared reservation.
    described = json.loads(
        (files("googleapiclient.discovery_cache") / "documents" / "compute.v1.json").read_text()
    )["schemas"]["ReservationAffinity"]["properties"]["values"]["description"]

    assert "projects/different-project/reservations/some-reservation-name" in described
    assert stack(on_shared_reservation).pool(GKE_RESERVED_POOL).gcp.reservation_name == SHARED


def test_a_reservation_shared_with_the_project_is_read_from_its_owner(
    google: FakeGoogle,
) -> None:
    shared_reservation(google)

    assert of_pool(findings(google, on_shared_reservation), GKE_RESERVED_POOL) == [
        Finding(
            "ok",
            RESERVED,
            f"Reservation {SHARED}: 2 x a3-highgpu-8g in us-central1-a, 1 free (1 in use, by"
            " the pool's running nodes or other VMs).",
            "Nothing.",
        )
    ]


def test_a_reservation_shared_with_the_owners_organization_is_ok(google: FakeGoogle) -> None:
    # `ShareSettings.shareType` ORGANIZATION (compute.v1.json): open to every project of the
    # owner's organization, with no `projectMap`.
    shared_reservation(google, shareSettings={"shareType": "ORGANIZATION"})

    (finding,) = of_pool(findings(google, on_shared_reservation), GKE_RESERVED_POOL)

    assert finding.severity == "ok"


def test_a_reservation_named_by_its_full_path_in_the_clusters_project_is_read_there(
    google: FakeGoogle,
) -> None:
    # GET .../zones/<zone>/reservations/<name> takes the short name (compute.v1.json
    # `compute.reservations.get` path); the full path would be a 404.
    google.reservation()

    def full_path(config: Config) -> None:
        pool(config, GKE_RESERVED_POOL)["gcp"]["reservationName"] = (
            f"projects/{PROJECT}/reservations/{RESERVATION}"
        )

    (finding,) = of_pool(findings(google, full_path), GKE_RESERVED_POOL)

    assert finding.severity == "ok"


def test_a_reservation_not_shared_with_the_project_blocks(google: FakeGoogle) -> None:
    shared_reservation(google, shareSettings={"shareType": "LOCAL"})

    assert of_pool(findings(google, on_shared_reservation), GKE_RESERVED_POOL) == [
        Finding(
            "blocking",
            RESERVED,
            f"Reservation h100-central of project {OWNER} is not shared with project {PROJECT}"
            " (shareType LOCAL, projects: none): the pool's nodes cannot consume it.",
            "Share it with the project (gcloud compute reservations update h100-central --zone"
            f" us-central1-a --project {OWNER} --add-share-with={PROJECT}), or name another in"
            f" {WHERE}.",
        )
    ]


def test_a_shared_reservation_the_check_may_not_read_is_a_warning(google: FakeGoogle) -> None:
    shared_reservation(google, status=403)

    assert of_pool(findings(google, on_shared_reservation), GKE_RESERVED_POOL) == [
        Finding(
            "warning",
            RESERVED,
            f"Reservation h100-central of project {OWNER} could not be read"
            f" (compute.reservations.get refused on project {OWNER}): whether it exists in"
            f" us-central1-a, matches the pool's nodes and is shared with project {PROJECT} is"
            " unchecked.",
            f"Check it in project {OWNER} (gcloud compute reservations describe h100-central"
            f" --zone us-central1-a --project {OWNER}), or grant the check"
            " compute.reservations.get there.",
        )
    ]


def test_a_shared_reservation_its_owner_does_not_have_blocks(google: FakeGoogle) -> None:
    assert of_pool(findings(google, on_shared_reservation), GKE_RESERVED_POOL) == [
        Finding(
            "blocking",
            RESERVED,
            f"Compute Engine knows no reservation h100-central in project {OWNER}'s zone"
            " us-central1-a.",
            f"Check {WHERE} and the pool's zone.",
        )
    ]

"""The GKE side of `gpu-platform preflight`: a GKE stack against its Google Cloud project.

Read-only calls to the GKE and Compute Engine REST APIs (v1), with Application Default
Credentials, answer what would otherwise surface as a node pool that never gets a node:

- the cluster exists and is RUNNING on a Kubernetes version the platform supports, and its GKE
  version has each flex-start and queued pool's mode (`gke_capacity_too_new`), which GKE asks of
  the cluster itself;
- each `reservation: specific` pool's reservation is in the pool's zone, READY, of the pool's
  machine type and GPUs, consumed only by VMs that name it, and holds the pool's `min` and
  `max`, with how many of its VMs are free;
- each `reservation: any` pool has READY reservations open to any VM in its zones, of its machine
  type and GPUs, with how many of their VMs are free;
- the project is the platform's alone: no other cluster shares its Workload Identity pool, and
  what trusts the pool (`identity`);
- the GPU pods Kueue will not manage in a tenant namespace whose queue the next `up` turns on,
  and the unfinished Workloads of one whose queue it turns off, through the cluster's Kubernetes
  API (`gpu_platform.preflight.queue_changes`).

Fields and shapes are those of the APIs' discovery documents as google-api-python-client ships
them (`googleapiclient/discovery_cache/documents/container.v1.json` and `compute.v1.json`): the
`Cluster`, `Reservation` and `ReservationAggregatedList` schemas. The tests check every answer
they fake against those schemas.
"""

import base64
import json
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import google.auth
import requests
from google.auth.exceptions import DefaultCredentialsError, GoogleAuthError, RefreshError
from google.auth.transport.requests import AuthorizedSession, Request
from requests.adapters import HTTPAdapter
from urllib3.exceptions import MaxRetryError
from urllib3.util.retry import Retry

from gpu_platform.accelerators import ACCELERATORS
from gpu_platform.config import (
    ConfigError,
    GpuPoolSpec,
    StackConfig,
    dynamic_workload_scheduler_modes,
    gke_capacity_too_new,
    key_path,
)
from gpu_platform.deadline import (
    CONNECT_TIMEOUT_SECONDS,
    MAX_ATTEMPTS,
    READ_TIMEOUT_SECONDS,
    Call,
    Calls,
    Deadline,
    DeadlinePassed,
)
from gpu_platform.gke.locations import zone_region
from gpu_platform.gke.machine_types import fixed_series_of, gpu_shape
from gpu_platform.gke.preflight.create import creation_findings
from gpu_platform.gke.preflight.exporter import exporter_label_findings
from gpu_platform.gke.preflight.google_api_error import RATE_LIMIT_REASONS, GoogleApiError
from gpu_platform.gke.preflight.identity import identity_findings
from gpu_platform.gke.preflight.lock import lock_findings
from gpu_platform.gke.preflight.quotas import quota_findings, unchecked_pools
from gpu_platform.gke.preflight.upgrades import upgrade_findings
from gpu_platform.node_identity import GpuShape
from gpu_platform.preflight.cannot_check import CannotCheck
from gpu_platform.preflight.findings import Finding
from gpu_platform.preflight.queue_changes import (
    KubeGet,
    KubeUnreadable,
    found_or_none,
    queue_change_findings,
    unread_namespaces,
)
from gpu_platform.versions import SUPPORTED_KUBERNETES_VERSIONS

# Each discovery document's `rootUrl` and `servicePath`.
CONTAINER_API = "https://container.googleapis.com/v1/"
COMPUTE_API = "https://compute.googleapis.com/compute/v1/"
SERVICE_USAGE_API = "https://serviceusage.googleapis.com/v1/"
IAM_API = "https://iam.googleapis.com/v1/"
RESOURCE_MANAGER_API = "https://cloudresourcemanager.googleapis.com/v1/"
CLOUD_QUOTAS_API = "https://cloudquotas.googleapis.com/v1/"
BINARY_AUTHORIZATION_API = "https://binaryauthorization.googleapis.com/v1/"

API_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
"""The OAuth scope the check asks its credentials for: the one `gcloud auth application-default
login` grants, which the APIs' read methods accept."""
EMAIL_SCOPE = "https://www.googleapis.com/auth/userinfo.email"
"""Asked for too by the credentials of the cluster's Kubernetes API only, as
`gke-gcloud-auth-plugin` asks: with it the API knows a service account by its e-mail, which RBAC
bindings name, rather than by its numeric ID (`defaultScopes`, kubernetes/cloud-provider-gcp
cmd/gke-gcloud-auth-plugin/cred.go). Not for the Google APIs: a user's credentials send their
scopes with each refresh, which fails where the login did not grant them all
(google/oauth2/_client.py, google-auth 2.62)."""
CLUSTER_PERMISSION = "container.clusters.get"
RESERVATION_PERMISSION = "compute.reservations.get"
RESERVATIONS_PERMISSION = "compute.reservations.list"
"""What `compute.reservations.aggregatedList` asks of the caller."""
SERVER_CONFIG_PERMISSION = "container.clusters.list"
"""What `container.projects.locations.getServerConfig` asks of the caller (GKE's IAM
permissions table); only a stack that creates its cluster asks it."""
REGION_PERMISSION = "compute.regions.get"
PROJECT_PERMISSION = "compute.projects.get"
CLUSTERS_PERMISSION = "container.clusters.list"
"""What `container.projects.locations.clusters.list` asks of the caller."""
SERVICE_ACCOUNTS_PERMISSION = "iam.serviceAccounts.list"
SERVICE_ACCOUNT_POLICY_PERMISSION = "iam.serviceAccounts.getIamPolicy"
PROJECT_POLICY_PERMISSION = "resourcemanager.projects.getIamPolicy"
QUOTA_INFOS_PERMISSION = "cloudquotas.quotas.get"
"""What Cloud Quotas' `quotaInfos.list` asks of the caller; asked only for pools whose GPUs
Compute Engine's API names no quota for, and a refusal is a warning, not a failed check."""
READ_ONLY_PERMISSIONS = (
    CLUSTER_PERMISSION,
    RESERVATION_PERMISSION,
    RESERVATIONS_PERMISSION,
    REGION_PERMISSION,
    PROJECT_PERMISSION,
    CLUSTERS_PERMISSION,
    SERVICE_ACCOUNTS_PERMISSION,
    SERVICE_ACCOUNT_POLICY_PERMISSION,
    PROJECT_POLICY_PERMISSION,
)
"""Every permission the check's calls need; a test keeps it, and the README's list, equal to
them."""
_VIEWER_ROLES = "roles/container.clusterViewer, roles/compute.viewer and roles/iam.securityReviewer"
SERVICE_PERMISSION = "serviceusage.services.get"
"""What `serviceusage.services.get` asks of the caller: only a stack that creates its cluster
checks its project's APIs (roles/serviceusage.serviceUsageViewer grants it)."""
BINARY_AUTHORIZATION_POLICY_PERMISSION = "binaryauthorization.policy.get"
"""What `binaryauthorization.projects.getPolicy` asks of the caller: only a stack that creates
its cluster and writes the project's policy reads it (roles/binaryauthorization.policyViewer
grants it)."""

# `Reservation.status` (compute.v1.json): READY is "ready for use"; a reservation CREATING
# ("resources are being allocated") or UPDATING is on its way there, one DELETING or INVALID
# holds nothing a node can consume.
_READY = "READY"
_UNUSABLE_STATUSES = frozenset({"DELETING", "INVALID"})
# A used-up rate quota: 429 RESOURCE_EXHAUSTED, or Compute Engine's 403 with one of these reasons
# ("Compute Engine rate quotas"). Both are retried with backoff within the deadline, with 500,
# 502, 503 and 504 (Google's "Retry failed requests": retry 408, 429 and 5xx with exponential
# backoff); a throttled call that still fails says so.
_THROTTLED_STATUS = 429
_RETRIED_STATUSES = (_THROTTLED_STATUS, 500, 502, 503, 504)
SERVICE_ACCOUNTS_PAGE = 100
POLICY_READERS = 8
"""How many service accounts' policies are read at once: each call waits on the network, not on
this machine, and a few at a time keep the check's share of the project's IAM read quota small
(a throttled call is retried like any other)."""
IAM_POLICY_VERSION = 3
"""The policy version asked for: 3 returns conditional bindings with their conditions (IAM,
"Policy versions"); an older one leaves them out of the answer."""


class GoogleApis:
    """The check's read-only calls for one project, through `session`: a requests session with
    the credentials added (google-auth's `AuthorizedSession`), each call given up after
    `timeout`, (connect, read) seconds; the cluster's Kubernetes API through `kube_session`,
    `session` where none is given."""

    def __init__(
        self,
        session: requests.Session,
        project: str,
        timeout: tuple[float, float] = (CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS),
        kube_session: requests.Session | None = None,
    ):
        self.session = session
        self.project = project
        self.timeout = timeout
        self.kube_session = kube_session or session
        self._clusters: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._server_configs: dict[str, dict[str, Any]] = {}

    @classmethod
    def with_default_credentials(
        cls, project: str, deadline: Deadline, calls: Calls
    ) -> "GoogleApis":
        """Over requests, as gcloud's and Google's client libraries go: it takes a proxy from
        HTTPS_PROXY and NO_PROXY, and CA certificates from REQUESTS_CA_BUNDLE, for the
        credentials' own calls (token refresh, the metadata server) and for the APIs alike.
        The APIs' calls are retried on throttling, server errors and timeouts within the
        deadline (`_DeadlineRetry`). Each request is reported to `calls`."""
        # Without a credentials file, google-auth asks the Compute Engine metadata server
        # (google/auth/compute_engine/_metadata.py, `ping`: 3 tries of 3 s each).
        calls.step("looking for Application Default Credentials")
        credentials, _ = google.auth.default(scopes=[API_SCOPE])
        # The token refresh goes through a session of its own, which google-auth mounts with
        # an adapter that retries a failed connection 3 times (transport/requests.py,
        # AuthorizedSession.__init__); here it reports its requests too. What bounds a refresh
        # is each call's timeout, which AuthorizedSession.request passes on to it: its
        # `refresh_timeout` argument is kept but never read (google-auth 2.62).
        refresh = requests.Session()
        refresh.mount("https://", _Reported(calls, max_retries=3))
        refresh.mount("http://", _Reported(calls, max_retries=3))
        session = AuthorizedSession(credentials, auth_request=Request(refresh))
        retries = _DeadlineRetry(calls, deadline)
        session.mount("https://", _RetriedThrottling(calls, retries))
        session.mount("http://", _RetriedThrottling(calls, retries))
        # The cluster's API is read once more where it fails (`queue_change_findings`), so
        # its reads are not retried: an endpoint out of reach costs one connect timeout.
        kube_credentials, _ = google.auth.default(scopes=[API_SCOPE, EMAIL_SCOPE])
        kube = AuthorizedSession(kube_credentials, auth_request=Request(refresh))
        kube.mount("https://", _Reported(calls))
        timeout = (deadline.connect_timeout, deadline.read_timeout)
        return cls(session, project, timeout, kube)

    def cluster(self, location: str, name: str) -> dict[str, Any] | None:
        """`container.projects.locations.clusters.get`, asked once; None where GKE has no such
        cluster."""
        key = (location, name)
        if key not in self._clusters:
            path = ("projects", self.project, "locations", location, "clusters", name)
            self._clusters[key] = self._find(CONTAINER_API, path, CLUSTER_PERMISSION)
        return self._clusters[key]

    def kube(self, cluster: Mapping[str, Any]) -> KubeGet | None:
        """GETs of the cluster's Kubernetes API (`Cluster.endpoint`), as kubectl reaches it:
        the same credentials' token, over HTTPS checked against the cluster's CA
        (`masterAuth.clusterCaCertificate`); None where GKE gives neither."""
        endpoint = cluster.get("endpoint")
        authority = (cluster.get("masterAuth") or {}).get("clusterCaCertificate")
        if not endpoint or not authority:
            return None

        def get(path: str) -> Mapping[str, Any] | None:
            with tempfile.NamedTemporaryFile(suffix=".crt") as ca:
                ca.write(base64.b64decode(authority))
                ca.flush()
                try:
                    response = self.kube_session.get(
                        f"https://{endpoint}{path}", timeout=self.timeout, verify=ca.name
                    )
                except GoogleAuthError as error:
                    # The session's own credentials, with the e-mail scope, renew apart from
                    # the Google APIs' ones, and a user's login may not have granted that scope
                    # (google/oauth2/_client.py `refresh_grant` sends the scopes, google-auth
                    # 2.62.2): a RefreshError, not a requests one, which must cost only these
                    # reads.
                    why = f"Google did not renew the credentials' token for it ({error})"
                    raise KubeUnreadable(why) from error
            return found_or_none(response)

        return get

    def service_state(self, service: str) -> str:
        """`serviceusage.services.get`: whether the API is enabled in the project
        (`GoogleApiServiceusageV1Service.state`)."""
        path = ("projects", self.project, "services", service)
        return str(self._get(SERVICE_USAGE_API, path, SERVICE_PERMISSION).get("state", ""))

    def server_config(self, location: str) -> dict[str, Any]:
        """`container.projects.locations.getServerConfig`: the versions GKE offers in the
        location, per release channel (`ServerConfig.channels[].validVersions`) and outside
        one (`validMasterVersions`); asked once."""
        if location not in self._server_configs:
            path = ("projects", self.project, "locations", location, "serverConfig")
            self._server_configs[location] = self._get(
                CONTAINER_API, path, SERVER_CONFIG_PERMISSION
            )
        return self._server_configs[location]

    def region_quotas(self, region: str) -> list[dict[str, Any]]:
        """`compute.regions.get`: the region's quotas (`Region.quotas`)."""
        path = ("projects", self.project, "regions", region)
        return list(self._get(COMPUTE_API, path, REGION_PERMISSION).get("quotas", []))

    def project_quotas(self) -> list[dict[str, Any]]:
        """`compute.projects.get`: the project's quotas over all regions (`Project.quotas`)."""
        return list(
            self._get(COMPUTE_API, ("projects", self.project), PROJECT_PERMISSION).get("quotas", [])
        )

    def binary_authorization_policy(self) -> dict[str, Any]:
        """`binaryauthorization.projects.getPolicy`: the project's policy (`Policy`), Binary
        Authorization's default where no one wrote one."""
        path = ("projects", self.project, "policy")
        return self._get(BINARY_AUTHORIZATION_API, path, BINARY_AUTHORIZATION_POLICY_PERMISSION)

    def clusters(self) -> dict[str, Any]:
        """`container.projects.locations.clusters.list` over every location (`-`): the
        `ListClustersResponse`, whose `missingZones` are the zones that did not answer."""
        path = ("projects", self.project, "locations", "-", "clusters")
        return self._get(CONTAINER_API, path, CLUSTERS_PERMISSION)

    def service_accounts(self) -> list[dict[str, Any]]:
        """`iam.projects.serviceAccounts.list`, page by page (`nextPageToken`), as many to a page
        as the API gives (`pageSize`: "The maximum allowed value is 100", iam.v1)."""
        found: list[dict[str, Any]] = []
        query = {"pageSize": str(SERVICE_ACCOUNTS_PAGE)}
        while True:
            page = self._get(
                IAM_API,
                ("projects", self.project, "serviceAccounts"),
                SERVICE_ACCOUNTS_PERMISSION,
                query,
            )
            found += page.get("accounts", [])
            if not page.get("nextPageToken"):
                return found
            query = {**query, "pageToken": page["nextPageToken"]}

    def service_account_policies(self, emails: Sequence[str]) -> list[dict[str, Any]]:
        """`iam.projects.serviceAccounts.getIamPolicy` of each account, in `emails`' order:
        who may act as it, and how. POLICY_READERS at a time, so that a project of hundreds
        of accounts is read within the deadline; the first call that fails ends them all."""
        with ThreadPoolExecutor(POLICY_READERS, thread_name_prefix="preflight-policies") as pool:
            return list(pool.map(self._service_account_policy, emails))

    def _service_account_policy(self, email: str) -> dict[str, Any]:
        path = ("projects", self.project, "serviceAccounts", email)
        query = {"options.requestedPolicyVersion": str(IAM_POLICY_VERSION)}
        try:
            return self._read_policy(IAM_API, path, SERVICE_ACCOUNT_POLICY_PERMISSION, query, None)
        except GoogleApiError as error:
            # Deleted between the list and this read: an account that no longer exists
            # trusts no one.
            if error.status != 404:
                raise
            return {}

    def project_policy(self) -> dict[str, Any]:
        """`cloudresourcemanager.projects.getIamPolicy`: the project's role bindings."""
        body = {"options": {"requestedPolicyVersion": IAM_POLICY_VERSION}}
        return self._read_policy(
            RESOURCE_MANAGER_API, ("projects", self.project), PROJECT_POLICY_PERMISSION, {}, body
        )

    def compute_quota_infos(self) -> list[dict[str, Any]]:
        """Cloud Quotas' `projects.locations.services.quotaInfos.list` for Compute Engine,
        page by page (`nextPageToken`)."""
        service = ("services", "compute.googleapis.com", "quotaInfos")
        path = ("projects", self.project, "locations", "global", *service)
        found: list[dict[str, Any]] = []
        query: dict[str, str] = {}
        while True:
            page = self._get(CLOUD_QUOTAS_API, path, QUOTA_INFOS_PERMISSION, query)
            found += page.get("quotaInfos", [])
            if not page.get("nextPageToken"):
                return found
            query = {"pageToken": page["nextPageToken"]}

    def reservation(
        self, zone: str, name: str, project: str | None = None
    ) -> dict[str, Any] | None:
        """`compute.reservations.get`, of the project's or of `project`'s (a reservation it
        shares); None where the zone has no such reservation."""
        path = ("projects", project or self.project, "zones", zone, "reservations", name)
        return self._find(COMPUTE_API, path, RESERVATION_PERMISSION)

    @cached_property
    def reservations(self) -> list[dict[str, Any]]:
        """The project's reservations in every zone: `compute.reservations.aggregatedList`, page
        by page (`nextPageToken`), each page's `items` keyed by zone."""
        found: list[dict[str, Any]] = []
        query: dict[str, str] = {}
        while True:
            page = self._get(
                COMPUTE_API,
                ("projects", self.project, "aggregated", "reservations"),
                RESERVATIONS_PERMISSION,
                query,
            )
            for scope in page.get("items", {}).values():
                found += scope.get("reservations", [])
            if not page.get("nextPageToken"):
                return found
            query = {"pageToken": page["nextPageToken"]}

    def _find(self, api: str, path: Sequence[str], permission: str) -> dict[str, Any] | None:
        try:
            return self._get(api, path, permission)
        except GoogleApiError as error:
            if error.status != 404:
                raise
            return None

    def _read_policy(
        self,
        api: str,
        path: Sequence[str],
        permission: str,
        query: Mapping[str, str],
        body: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """A resource's IAM policy: `getIamPolicy` is a POST that reads."""
        resource = "/".join(quote(part, safe="") for part in path)
        url = f"{api}{resource}:getIamPolicy" + (f"?{urlencode(query)}" if query else "")
        response = self.session.post(url, json=body, timeout=self.timeout)
        return self._answer(response, permission, resource)

    def _get(
        self,
        api: str,
        path: Sequence[str],
        permission: str,
        query: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        resource = "/".join(quote(part, safe="") for part in path)
        url = f"{api}{resource}" + (f"?{urlencode(query)}" if query else "")
        response = self.session.get(url, timeout=self.timeout)
        return self._answer(response, permission, resource)

    @staticmethod
    def _answer(response: requests.Response, permission: str, resource: str) -> dict[str, Any]:
        if response.status_code != 200:
            raise GoogleApiError(permission, resource, response.status_code, response.content)
        found: dict[str, Any] = json.loads(response.content)
        return found


class _Reported(HTTPAdapter):
    """requests' own transport, reporting each request it sends to `calls`, and whether it was
    answered, throttled or not."""

    def __init__(self, calls: Calls, max_retries: Retry | int = 0):
        super().__init__(max_retries=max_retries)
        self._calls = calls

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        url = str(request.url)
        self._calls.sent(f"{request.method} {urlsplit(url).path}", url)
        response = self._send(request, *args, **kwargs)
        self._calls.answered(throttled=is_throttled(response.status_code, response.content))
        return response

    def _send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        return super().send(request, *args, **kwargs)


class _RetriedThrottling(_Reported):
    """The APIs' transport: urllib3 retries 429 and 5xx answers itself (`_DeadlineRetry`);
    Compute Engine's rate-limit 403 is told from a refusal by its body, which urllib3 does not
    read, so it is retried here, as urllib3 would a 429: the same Retry's count and backoff."""

    def _send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        retries = self.max_retries
        while True:
            response = super()._send(request, *args, **kwargs)
            if response.status_code == _THROTTLED_STATUS or not is_throttled(
                response.status_code, response.content
            ):
                return response
            try:
                retries = retries.increment(str(request.method), str(request.url), response.raw)
            except MaxRetryError:
                return response
            retries.sleep(response.raw)


class _DeadlineRetry(Retry):
    """urllib3's Retry for the APIs' calls, all reads (GETs, and `getIamPolicy`'s POSTs): up
    to MAX_ATTEMPTS tries of a call that meets throttling (429), a server error (500, 502, 503,
    504) or a read timeout, backing off 0, 2, 4 and 8 s between them, or as long as the answer's
    Retry-After says
    (urllib3/util/retry.py). A connection that fails (refused, an unknown name, no answer to
    the handshake) is tried once more, at once, and a proxy that refuses the tunnel not at all:
    neither heals within seconds, and the check says at once that Google could not be reached.
    Each retry is reported to `calls`; one whose wait would pass the deadline is not made. The
    last answer is returned, not raised (`raise_on_status=False`), so that the error Google
    gave, which says it was throttled, is what the check reports."""

    def __init__(self, calls: Calls, deadline: Deadline, **kwargs: Any):
        defaults: dict[str, Any] = {
            "total": MAX_ATTEMPTS - 1,
            "connect": 1,
            "other": 0,
            "backoff_factor": 1,
            "status_forcelist": _RETRIED_STATUSES,
            "allowed_methods": {"GET", "POST"},
            "respect_retry_after_header": True,
            "raise_on_status": False,
        }
        super().__init__(**(defaults | kwargs))
        self.calls = calls
        self.deadline = deadline

    def new(self, **kwargs: Any) -> "_DeadlineRetry":
        # urllib3 makes each next Retry with `type(self)(**params)`.
        return super().new(calls=self.calls, deadline=self.deadline, **kwargs)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> "_DeadlineRetry":
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        after = retry.get_retry_after(response) if response is not None else None
        wait = after if self.respect_retry_after_header and after else retry.get_backoff_time()
        if wait >= self.deadline.remaining():
            raise MaxRetryError(_pool, url, error) from error
        if response is not None:
            # Only a 429 or a rate-limit 403 (`_RetriedThrottling`) is retried for throttling.
            self.calls.answered(throttled=response.status in (_THROTTLED_STATUS, 403))
        self.calls.again()
        return retry


def is_throttled(status: int, body: bytes) -> bool:
    """Whether an answer is Google's to a used-up rate quota: a 429, or Compute Engine's 403
    with a rate-limit reason."""
    if status == _THROTTLED_STATUS:
        return True
    return status == 403 and GoogleApiError("", "", status, body).reason in RATE_LIMIT_REASONS


def check(stack: str, config: StackConfig, deadline: Deadline) -> list[Finding]:
    """Every finding for a GKE stack. ConfigError for a pool the program would refuse (its
    secret pools not shown); CannotCheck for a project it cannot check, or that does not answer
    by the deadline."""
    project = config.cluster.project
    assert project is not None  # config validation requires it on GCP
    calls = Calls()
    try:
        return deadline.run(
            lambda: preflight(
                config, GoogleApis.with_default_credentials(project, deadline, calls)
            ),
            calls,
        )
    except DeadlinePassed as passed:
        raise CannotCheck(
            f"Cannot check stack {stack}: {passed.explain('Google Cloud')}"
        ) from passed
    except ConfigError as error:
        secret = ["pools"] if config.is_secret("pools") else []
        pools = [pool.model_dump(mode="json", by_alias=True) for pool in config.pools]
        raise error.hiding_secrets(secret, {"pools": pools}) from None
    except (GoogleAuthError, GoogleApiError, requests.RequestException) as error:
        reason = why_it_cannot_check(error, calls.last)
        raise CannotCheck(f"Cannot check stack {stack}: {reason}") from error


def preflight(config: StackConfig, apis: GoogleApis) -> list[Finding]:
    """Every finding for the stack, in the order: the cluster, tenant namespaces moving into or
    out of the queues, the project's other clusters and grants to its Workload Identity pool,
    then each pool in the stack file's
    order (its Dynamic Workload Scheduler modes against the cluster's version, or its
    reservations). ConfigError, before any call, where a pool that consumes reservations has a
    machine type the program would refuse."""
    gpus = _gpus_of_pools(config)
    location = config.cluster.location or ""
    cluster = apis.cluster(location, config.cluster.name)
    if config.cluster.create is not None:
        # What its creation needs, and where an earlier `up` created it, the lock's entries for
        # the versions it runs; before that, for those GKE creates it at.
        version: str | None = None
        findings = creation_findings(config, apis)
        findings += lock_findings(config, cluster, gpus, lambda: apis.server_config(location))
        cluster = None
    else:
        version, findings = _cluster_findings(config, apis)
        if cluster is not None:
            findings += upgrade_findings(config, cluster)
            findings += exporter_label_findings(config, cluster)
            findings += lock_findings(config, cluster, gpus, lambda: apis.server_config(location))
    live = apis.cluster(location, config.cluster.name)
    if live is not None and config.namespaces:
        kube = apis.kube(live)
        if kube is not None:
            findings += queue_change_findings(config, kube)
        else:
            why = "GKE gives the cluster no endpoint or no CA certificate"
            findings.append(unread_namespaces(config.namespaces, why))
    findings += identity_findings(config, apis, cluster)
    for i, pool in enumerate(config.pools):
        if version is not None and dynamic_workload_scheduler_modes(pool):
            findings.append(_capacity_version_finding(config, i, pool, version))
        if pool.gcp.reservation == "specific":
            findings += _specific_findings(i, pool, gpus[i], apis)
        elif pool.gcp.reservation == "any":
            findings.append(_any_finding(config, i, pool, gpus[i], apis))
    return findings + _quota_findings(config, gpus, apis)


def _quota_findings(
    config: StackConfig, gpus: Mapping[int, GpuShape], apis: GoogleApis
) -> list[Finding]:
    location = config.cluster.location
    assert location is not None  # config validation requires it on GCP
    region = zone_region(location) or location
    pools = [(pool, gpus[i]) for i, pool in enumerate(config.pools)]
    regional, global_ = apis.region_quotas(region), apis.project_quotas()
    family_quotas: list[dict[str, Any]] | str = []
    if unchecked_pools(pools):
        try:
            family_quotas = apis.compute_quota_infos()
        except GoogleApiError as error:
            family_quotas = (
                f"{error.status} {error.reason}: {error.message} (it needs the Cloud Quotas API,"
                f" cloudquotas.googleapis.com, enabled and {QUOTA_INFOS_PERMISSION})"
            )
    return quota_findings(pools, region, regional, global_, family_quotas)


def _gpus_of_pools(config: StackConfig) -> dict[int, GpuShape]:
    """The GPUs of a node of each pool, by the pool's index: for its quotas and reservations."""
    problems = []
    found = {}
    for i, pool in enumerate(config.pools):
        try:
            found[i] = gpu_shape(pool, i)
        except ConfigError as error:
            problems += error.problems
    if problems:
        raise ConfigError(problems)
    return found


# --- The cluster -----------------------------------------------------------------------------


def _cluster_findings(config: StackConfig, apis: GoogleApis) -> tuple[str | None, list[Finding]]:
    """The cluster's finding, and its GKE version where it exists."""
    spec = config.cluster
    assert spec.location is not None  # config validation requires it on GCP
    subject = f"cluster {spec.name}"
    cluster = apis.cluster(spec.location, spec.name)
    if cluster is None:
        return None, [
            Finding(
                "blocking",
                subject,
                f"No GKE cluster {spec.name} in {spec.location} of project {spec.project}.",
                f"Check {key_path('cluster', 'name')}, {key_path('cluster', 'location')} and"
                f" {key_path('cluster', 'project')}, or create the cluster first.",
            )
        ]
    status, version = cluster["status"], cluster["currentMasterVersion"]
    minor = ".".join(version.split(".")[:2])
    describe = f"gcloud container clusters describe {spec.name} --location {spec.location}"
    # `Cluster.status`: RECONCILING is "some work is actively being done on the cluster, such
    # as upgrading the master or node software"; every state but it and RUNNING is being
    # created, deleted, unusable or in need of repair.
    if status not in ("RUNNING", "RECONCILING"):
        conditions = "; ".join(
            c["message"] for c in cluster.get("conditions", []) if "message" in c
        )
        return version, [
            Finding(
                "blocking",
                subject,
                f"The cluster is {status}, not RUNNING{f' ({conditions})' if conditions else ''}.",
                f"Wait until it is RUNNING; where it is DEGRADED or in ERROR, act on what its"
                f" conditions say ({describe}).",
            )
        ]
    if minor not in SUPPORTED_KUBERNETES_VERSIONS:
        return version, [
            Finding(
                "blocking",
                subject,
                f"GKE {version} is Kubernetes {minor}, not one the platform supports"
                f" ({', '.join(SUPPORTED_KUBERNETES_VERSIONS)}).",
                "Upgrade the cluster to a supported version.",
            )
        ]
    if status == "RECONCILING":
        return version, [
            Finding(
                "warning",
                subject,
                f"GKE is working on the cluster (RECONCILING, GKE {version}), such as an upgrade:"
                " node pool changes may have to wait until it is done.",
                f"Nothing, unless it stays so ({describe}).",
            )
        ]
    return version, [Finding("ok", subject, f"RUNNING, GKE {version}.", "Nothing.")]


def _capacity_version_finding(
    config: StackConfig, i: int, pool: GpuPoolSpec, version: str
) -> Finding:
    """Whether the cluster's GKE version has the pool's Dynamic Workload Scheduler modes: GKE
    asks it of the cluster, whatever version the pool's nodes run (config validation checks a
    pinned `gcp.nodeVersion`)."""
    subject = f"pool {pool.name}"
    too_new = gke_capacity_too_new(pool, version)
    if not too_new:
        modes = " and ".join(f"gcp.{key}" for key in dynamic_workload_scheduler_modes(pool))
        return Finding("ok", subject, f"The cluster's GKE {version} has {modes}.", "Nothing.")
    needs = "; ".join(
        f"{key_path('pools', i, 'gcp', key)} needs {minimum} or later"
        for key, minimum in too_new.items()
    )
    spec = config.cluster
    return Finding(
        "blocking",
        subject,
        f"The cluster runs GKE {version}: {needs}.",
        f"Upgrade the cluster first (gcloud container clusters upgrade {spec.name} --location"
        f" {spec.location} --master --cluster-version VERSION), or turn"
        f" {' and '.join(f'gcp.{key}' for key in too_new)} off.",
    )


# --- Reservations ----------------------------------------------------------------------------


def _specific_findings(
    i: int, pool: GpuPoolSpec, gpus: GpuShape, apis: GoogleApis
) -> list[Finding]:
    """The reservation a `reservation: specific` pool names, in its one zone (config validation
    holds it to one): whether its nodes can consume it, how much of it they can, and whether
    other VMs can too."""
    subject = f"pool {pool.name}"
    where = key_path("pools", i, "gcp", "reservationName")
    name, (zone,) = pool.gcp.reservation_name, pool.zones
    assert name is not None  # config validation requires it with reservation specific
    owner, short = reservation_owner(name, apis.project)
    if owner != apis.project:
        shared = _shared_reservation(i, pool, owner, short, zone, apis)
        if isinstance(shared, Finding):
            return [shared]
        reservation: dict[str, Any] | None = shared
    else:
        reservation = apis.reservation(zone, short)
    if reservation is None:
        return [_missing_reservation_finding(i, pool, name, zone, apis)]
    mismatches = _mismatches(i, pool, gpus, reservation)
    if mismatches:
        return [
            Finding(
                "blocking",
                subject,
                f"Reservation {name} does not match the pool's nodes, which cannot consume it:"
                f" {'; '.join(mismatches)}.",
                f"Set the pool's machine type and GPUs to the reservation's, or name another in"
                f" {where}.",
            )
        ]
    status = reservation["status"]
    if status in _UNUSABLE_STATUSES:
        return [
            Finding(
                "blocking",
                subject,
                f"Reservation {name} is {status}: no node can consume it.",
                f"Name a READY reservation in {where}.",
            )
        ]
    findings = []
    if status != _READY:
        findings.append(
            Finding(
                "warning",
                subject,
                f"Reservation {name} is {status}, not yet READY (ready for use).",
                f"Nothing, unless it stays so (gcloud compute reservations describe {name}"
                f" --zone {zone}).",
            )
        )
    findings.append(_held_finding(i, pool, name, reservation))
    surge = _surge_finding(i, pool, name, reservation)
    if surge is not None:
        findings.append(surge)
    # `Reservation.specificReservationRequired` (compute.v1.json): "If the field is set, then
    # only VMs that target the reservation by name can consume from this reservation"; unset,
    # VMs with affinity for any reservation consume it as well.
    if not reservation.get("specificReservationRequired"):
        findings.append(
            Finding(
                "warning",
                subject,
                f"Reservation {name} is open to any VM of the project with its properties"
                " (specificReservationRequired is false): other VMs, and node pools that consume"
                " any reservation, may take its capacity before the pool's nodes do.",
                "Nothing, if it is meant to be shared; otherwise reserve the capacity"
                " specifically targeted (gcloud compute reservations create"
                f" --require-specific-reservation) and name that reservation in {where}.",
            )
        )
    return findings


def reservation_owner(name: str, project: str) -> tuple[str, str]:
    """The project a `reservationName` is of and its name there: `projects/<owner>/reservations/
    <name>` names one another project shares (compute.v1.json `ReservationAffinity.values`)."""
    parts = name.split("/")
    if len(parts) == 4 and parts[0] == "projects" and parts[2] == "reservations":
        return parts[1], parts[3]
    return project, name


def _shared_reservation(
    i: int, pool: GpuPoolSpec, owner: str, name: str, zone: str, apis: GoogleApis
) -> dict[str, Any] | Finding:
    """Another project's reservation, where it can be read and is shared with the cluster's
    project; else the finding that says why not. Reading it takes `compute.reservations.get` on
    the owner's project, which a consumer's identity often lacks: then the check says what it
    could not see, and blocks nothing."""
    subject = f"pool {pool.name}"
    where = key_path("pools", i, "gcp", "reservationName")
    try:
        reservation = apis.reservation(zone, name, owner)
    except GoogleApiError as error:
        if not error.refused:
            raise
        return Finding(
            "warning",
            subject,
            f"Reservation {name} of project {owner} could not be read ({error.permission}"
            f" refused on project {owner}): whether it exists in {zone}, matches the pool's"
            f" nodes and is shared with project {apis.project} is unchecked.",
            f"Check it in project {owner} (gcloud compute reservations describe {name} --zone"
            f" {zone} --project {owner}), or grant the check {RESERVATION_PERMISSION} there.",
        )
    if reservation is None:
        return Finding(
            "blocking",
            subject,
            f"Compute Engine knows no reservation {name} in project {owner}'s zone {zone}.",
            f"Check {where} and the pool's zone.",
        )
    # `ShareSettings` (compute.v1.json): `SPECIFIC_PROJECTS` lists the consumers in
    # `projectMap`, keyed by project id; `ORGANIZATION` is open to the owner's organization
    # (which the check cannot see the cluster's project is in); `LOCAL` shares with none.
    share = reservation.get("shareSettings", {})
    consumers = share.get("projectMap", {})
    share_type = share.get("shareType")
    if share_type != "ORGANIZATION" and (
        share_type != "SPECIFIC_PROJECTS" or apis.project not in consumers
    ):
        return Finding(
            "blocking",
            subject,
            f"Reservation {name} of project {owner} is not shared with project {apis.project}"
            f" (shareType {share.get('shareType', 'LOCAL')}, projects:"
            f" {', '.join(sorted(consumers)) or 'none'}): the pool's nodes cannot consume it.",
            f"Share it with the project (gcloud compute reservations update {name} --zone"
            f" {zone} --project {owner} --add-share-with={apis.project}), or name another in"
            f" {where}.",
        )
    return reservation


def _missing_reservation_finding(
    i: int, pool: GpuPoolSpec, name: str, zone: str, apis: GoogleApis
) -> Finding:
    """Where the zone has no reservation of that name: the project's other zones may."""
    subject = f"pool {pool.name}"
    elsewhere = sorted(_zone_of(r) for r in apis.reservations if r["name"] == name)
    if elsewhere:
        return Finding(
            "blocking",
            subject,
            f"Reservation {name} is in {', '.join(elsewhere)}, not in the pool's zone {zone}:"
            " reservations are zonal, and the pool's nodes would never consume it.",
            f"Set {key_path('pools', i, 'zones')} to the reservation's zone.",
        )
    return Finding(
        "blocking",
        subject,
        f"Compute Engine knows no reservation {name} in project {apis.project}.",
        f"Check {key_path('pools', i, 'gcp', 'reservationName')}, or create the reservation"
        " before `pulumi up`.",
    )


def _held_finding(i: int, pool: GpuPoolSpec, name: str, reservation: Mapping[str, Any]) -> Finding:
    """How many VMs the reservation holds, and how many are free, against the pool's bounds.

    Past what the reservation holds, a `specific` pool's scale-ups fail, with no on-demand
    fallback, and are retried while pods wait: nothing breaks at `pulumi up`, and a `max` above
    the reservation may be meant for a reservation about to grow, so that is a warning. Its
    `min` is different: GKE starts those nodes with the pool and keeps them, which a reservation
    smaller than `min` never lets it do."""
    subject = f"pool {pool.name}"
    held, in_use = _counts(reservation)
    machine_type = reservation["specificReservation"]["instanceProperties"]["machineType"]
    what = (
        f"{held} x {machine_type} in {_zone_of(reservation)}, {held - in_use} free ({in_use} in"
        " use, by the pool's running nodes or other VMs)"
    )
    if pool.min > held:
        return Finding(
            "blocking",
            subject,
            f"min ({pool.min}) is more than reservation {name} holds: {what}. GKE starts and"
            " keeps min nodes, all from the reservation.",
            f"Lower {key_path('pools', i, 'min')} to at most {held}, or grow the reservation.",
        )
    if pool.max > held:
        return Finding(
            "warning",
            subject,
            f"max ({pool.max}) is more than reservation {name} holds: {what}. Past it the pool"
            " does not grow: with reservation specific there is no on-demand fallback, and pods"
            " wait Pending.",
            f"Lower {key_path('pools', i, 'max')} to {held}, unless the reservation is to grow.",
        )
    return Finding("ok", subject, f"Reservation {name}: {what}.", "Nothing.")


def _surge_finding(
    i: int, pool: GpuPoolSpec, name: str, reservation: Mapping[str, Any]
) -> Finding | None:
    """Whether the reservation has room for the nodes a surge upgrade adds, where the pool
    surges: GKE counts them against the reservation and "continues to attempt" the upgrade while
    it has no room (GKE's node-upgrades-quota page). None where the pool surges no node."""
    surge, _ = pool.gcp.surge_upgrade
    if pool.gcp.upgrade_strategy != "surge" or surge == 0:
        return None
    held, _ = _counts(reservation)
    subject = f"pool {pool.name}"
    if held < pool.max + surge:
        return Finding(
            "warning",
            subject,
            f"An upgrade adds {surge} node(s) (maxSurge) from reservation {name}, which holds"
            f" {held}: with the pool at its max of {pool.max}, GKE has no VM to surge to and keeps"
            " retrying the upgrade.",
            f"Set {key_path('pools', i, 'gcp', 'maxSurge')} to 0 (one node is then taken out at a"
            f" time), or grow the reservation to {pool.max + surge}.",
        )
    return Finding(
        "ok",
        subject,
        f"Reservation {name} holds {held}: room for the pool's max of {pool.max} and the"
        f" {surge} node(s) an upgrade adds.",
        "Nothing.",
    )


def _any_finding(
    config: StackConfig, i: int, pool: GpuPoolSpec, gpus: GpuShape, apis: GoogleApis
) -> Finding:
    """The READY reservations a `reservation: any` pool's nodes may consume in its zones: those
    open to any VM, of the pool's machine type and GPUs. Reservations other projects share with
    this one are not listed in it: a shared reservation is seen in its owner project only
    (Compute Engine, "View reservations")."""
    subject = f"pool {pool.name}"
    location = config.cluster.location
    assert location is not None  # config validation requires it on GCP
    # Where the nodes go (`gpu_platform.gke.zones`): the pool's zones, else a zonal cluster's
    # zone, else the region's zones that offer the machine type, which are the only ones with
    # reservations of it.
    zones = pool.zones or ([location] if zone_region(location) else [])
    region = zone_region(location) or location
    where = ", ".join(zones) or f"the zones of {region}"
    matching = [
        r
        for r in apis.reservations
        if (_zone_of(r) in zones if zones else zone_region(_zone_of(r)) == region)
        and r.get("status") == _READY
        and not _mismatches(i, pool, gpus, r)
    ]
    open_to_any = [r for r in matching if not r.get("specificReservationRequired")]
    shape = f"{pool.instance_types[0]} with {_gpus_text({_gke_gpus(gpus)})}"
    if not open_to_any:
        by_name = ", ".join(sorted(r["name"] for r in matching))
        also = (
            f" {by_name} match(es), but only VMs that name it consume it: reservation specific"
            " with its reservationName does."
            if by_name
            else ""
        )
        return Finding(
            "warning",
            subject,
            f"No READY reservation of {shape} in {where} is open to any VM: the pool's nodes start"
            f" on demand, at on-demand prices.{also}",
            "Nothing, if that is meant; otherwise reserve the machine type in one of those zones,"
            " without --require-specific-reservation.",
        )
    counted = [(r, *_counts(r)) for r in open_to_any]
    listed = "; ".join(
        f"{r['name']} in {_zone_of(r)}, {held - in_use} of {held} free"
        for r, held, in_use in counted
    )
    free = sum(held - in_use for _, held, in_use in counted)
    return Finding(
        "ok",
        subject,
        f"Reservations of {shape} open to its nodes in {where}: {listed}. {free} VM(s) free,"
        " for any matching VM of the project; past them nodes start on demand.",
        "Nothing.",
    )


def _mismatches(
    i: int, pool: GpuPoolSpec, gpus: GpuShape, reservation: Mapping[str, Any]
) -> list[str]:
    """How the reservation's VMs differ from the pool's nodes: a VM consumes a reservation only
    where its properties match the reservation's exactly (Compute Engine, "Create a reservation
    for a single project")."""
    properties = reservation.get("specificReservation", {}).get("instanceProperties", {})
    machine_type = properties.get("machineType")
    found = []
    if machine_type != pool.instance_types[0]:
        found.append(
            f"{key_path('pools', i, 'instanceTypes')} is {pool.instance_types}, the"
            f" reservation's {[machine_type] if machine_type else 'none'}"
        )
    theirs = {
        (a["acceleratorType"].rpartition("/")[2], a["acceleratorCount"])
        for a in properties.get("guestAccelerators", [])
    }
    ours = _gke_gpus(gpus)
    # `AcceleratorConfig.acceleratorType` is the accelerator's name or its URL. An
    # accelerator-optimized machine type comes with its GPUs (`gpu_platform.gke.machine_types`),
    # which a reservation of it may leave unlisted; an N1 VM has the GPUs attached to it.
    if theirs != {ours} and (theirs or machine_type is None or not fixed_series_of(machine_type)):
        found.append(f"its VMs have {_gpus_text(theirs)}, the pool's nodes {_gpus_text({ours})}")
    return found


def _gke_gpus(gpus: GpuShape) -> tuple[str, int]:
    gke_type = ACCELERATORS[gpus.accelerator].gke_type
    assert gke_type is not None  # gpu_shape gives GKE's accelerators only
    return gke_type, gpus.count


def _gpus_text(gpus: set[tuple[str, int]]) -> str:
    return " and ".join(f"{count} x {name}" for name, count in sorted(gpus)) or "no GPU"


def _counts(reservation: Mapping[str, Any]) -> tuple[int, int]:
    """VMs the reservation holds, and how many are in use (int64 values: JSON strings)."""
    held = reservation["specificReservation"]
    return int(held["count"]), int(held.get("inUseCount", 0))


def _zone_of(reservation: Mapping[str, Any]) -> str:
    """`Reservation.zone` is the zone's URL."""
    return str(reservation["zone"]).rpartition("/")[2]


# --- When it cannot check --------------------------------------------------------------------


def why_it_cannot_check(
    error: GoogleAuthError | GoogleApiError | requests.RequestException, last: Call | None = None
) -> str:
    """What stopped the check, and what to do about it; `last` is the last call made, which
    says how often a throttled call was tried."""
    login = "gcloud auth application-default login"
    if isinstance(error, DefaultCredentialsError):
        return (
            f"no Application Default Credentials ({error}). Run `{login}`, or set"
            " GOOGLE_APPLICATION_CREDENTIALS to a credentials file, and run it again."
        )
    if isinstance(error, RefreshError):
        return (
            f"Google did not renew the Application Default Credentials ({error}). Run `{login}`"
            " again, or check GOOGLE_APPLICATION_CREDENTIALS, and run it again."
        )
    if not isinstance(error, GoogleApiError):
        return f"Google Cloud could not be reached ({error}). Check the network, then run it again."
    answer = f"{error.status} {error.reason}: {error.message}"
    if error.status == _THROTTLED_STATUS or (
        error.status == 403 and error.reason in RATE_LIMIT_REASONS
    ):
        tries = (
            f" {last.throttled} time(s) in {last.attempts} attempts, backing off between them"
            if last is not None and last.throttled
            else ""
        )
        return (
            f"Google Cloud throttled {error.permission} on {error.resource} ({answer}){tries}:"
            " the project's rate quota for the API is used up, by this check or others, until"
            " it refills at the next minute. Run it again in a minute."
        )
    if error.status == 401:
        return (
            f"Google Cloud did not accept the credentials ({answer}). Run `{login}` again, or"
            " check GOOGLE_APPLICATION_CREDENTIALS, and run it again."
        )
    if error.status == 403:
        needs = ", ".join(READ_ONLY_PERMISSIONS)
        roles = _VIEWER_ROLES
        if error.permission == SERVICE_PERMISSION:
            needs += f" and, as the stack creates its cluster, {SERVICE_PERMISSION}"
            roles += " and roles/serviceusage.serviceUsageViewer"
        if error.permission == BINARY_AUTHORIZATION_POLICY_PERMISSION:
            needs += (
                ", and, as the stack writes the project's Binary Authorization policy,"
                f" {SERVICE_PERMISSION} and {BINARY_AUTHORIZATION_POLICY_PERMISSION}"
            )
            roles += (
                ", roles/serviceusage.serviceUsageViewer and roles/binaryauthorization.policyViewer"
            )
        return (
            f"Google Cloud refused {error.permission} on {error.resource} ({answer}). The check"
            f" needs, read-only: {needs} ({roles} grant them)."
        )
    return f"Google Cloud answered {error.resource} with {answer}. Run it again later."

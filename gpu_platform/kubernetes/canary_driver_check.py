"""Whether the GKE Ubuntu canary node this runs on loads the driver its NVIDIADriver names now:
the canary gate's first step there, run before its `nvidia-smi` check. Shipped in a ConfigMap
and run by the gate pod's init container; standard library only.

The GPU Operator renders one driver DaemonSet per NVIDIADriver and OS version, owned by the
NVIDIADriver (gpu-operator v26.7.0 internal/state/driver.go: `getDriverAppName`,
`SetControllerReference`), its driver container `nvidia-driver-ctr` running the NVIDIADriver's
`<repository>/<image>:<version>-<OS tag>` (api/nvidia/v1alpha1/nvidiadriver_types.go
`GetImagePath`; the OS tag is the DaemonSet's `nvidia.com/node.os-version` label,
manifests/state-driver/0500_daemonset.yaml), with `updateStrategy: OnDelete`. A new
NVIDIADriver reaches a node only when the operator's upgrade deletes the node's driver pod and
the DaemonSet controller starts one from the new template. The node's driver version alone
cannot tell: a new image of the same version reports the same version on the old pod.

So the node passes only when all of these hold:
- the DaemonSet of its driver pod is owned by the canary's NVIDIADriver;
- that DaemonSet's template runs the image the NVIDIADriver names now: until the operator has
  reconciled the changed NVIDIADriver, the DaemonSet is the old one;
- the pod runs that image itself, in its own `nvidia-driver-ctr`;
- the pod is Ready: its driver container's startup probe has seen the driver loaded.

The pod's own image, not the template it was made from, decides. Kubernetes counts a pod as of
its DaemonSet's current template when either its `pod-template-generation` or its
`controller-revision-hash` is the current one (kubernetes v1.35
pkg/controller/daemon/util/daemonset_util.go `IsPodUpdated`), and after a rollback (image A,
then B, then A again) the DaemonSet controller takes A's ControllerRevision up again while the
template generation rises (pkg/controller/daemon/update.go `constructHistory`). The operator's
upgrade compares the revision hash alone (k8s-operator-libs, vendored in gpu-operator v26.7.0,
pkg/upgrade/common_manager.go `podInSyncWithDS`), so it never restarts a node still on A: a
check by generation would wait for it to the gate's deadline. What names the gate's release
(`canary_gate._driver_digest`) is all in the image, so the image is the whole proof.

Otherwise it says why, leaves the node after a minute, as the `nvidia-smi` check does on an old
driver, and exits 75, which the gate Job does not count as a failure: the Job starts another pod
until its deadline. What waiting cannot mend fails the gate at once (exit 1): an API server that
goes on refusing the gate's service account, a certificate that does not verify against the
cluster's CA, a token or CA file that cannot be read.
"""

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

DRIVER_POD_SELECTOR = "app.kubernetes.io/component=nvidia-driver"
DRIVER_CONTAINER = "nvidia-driver-ctr"
OS_TAG_LABEL = "nvidia.com/node.os-version"
# EX_TEMPFAIL, as the gate's `nvidia-smi` check exits on a node still on the old driver.
PENDING_EXIT_CODE = 75
RETRY_SECONDS = 60
# A refusal is tried again this many times, this many seconds apart (`check_once_allowed`).
FORBIDDEN_RETRIES = 5
FORBIDDEN_RETRY_SECONDS = 2
TOKEN_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
Object = Mapping[str, Any]


def driver_image(nvidia_driver_image: str, daemon_set: Object) -> str:
    """The image the NVIDIADriver's DaemonSet must run: `GetImagePath`, which adds the OS tag
    to the tag unless the image is named by digest."""
    if "sha256:" in nvidia_driver_image:
        return nvidia_driver_image
    os_tag = _labels(daemon_set).get(OS_TAG_LABEL, "")
    return f"{nvidia_driver_image}-{os_tag}"


def driver_pending(pod: Object, daemon_set: Object, nvidia_driver: str, image: str) -> str | None:
    """Why the driver pod `pod`, of `daemon_set`, is not yet the driver of the NVIDIADriver
    `nvidia_driver` whose image is `image` (`repository/image:version`); None once it is."""
    pod_name = _meta(pod).get("name")
    ds_name = _meta(daemon_set).get("name")
    owners = [str(o.get("name")) for o in _owners(daemon_set) if o.get("kind") == "NVIDIADriver"]
    if nvidia_driver not in owners:
        return (
            f"driver pod {pod_name} is of DaemonSet {ds_name}, which NVIDIADriver"
            f" {nvidia_driver} does not own (its NVIDIADriver: {', '.join(owners) or 'none'})"
        )
    expected = driver_image(image, daemon_set)
    template = (daemon_set.get("spec") or {}).get("template") or {}
    in_template = _driver_images(template.get("spec") or {})
    if in_template != [expected]:
        return (
            f"DaemonSet {ds_name} runs {', '.join(in_template) or 'no driver container'},"
            f" not {expected}: the GPU Operator has not applied NVIDIADriver {nvidia_driver} yet"
        )
    in_pod = _driver_images(pod.get("spec") or {})
    if in_pod != [expected]:
        return (
            f"driver pod {pod_name} runs {', '.join(in_pod) or 'no driver container'}, not"
            f" {expected}: the GPU Operator has not upgraded this node yet"
        )
    if not _ready(pod):
        return f"driver pod {pod_name} runs {expected} but is not ready yet"
    return None


def node_pending(
    pods: list[Object],
    daemon_set_of: Callable[[str], Object],
    nvidia_driver: str,
    image: str,
    node: str,
) -> str | None:
    """Why the driver pods of `node` (`pods`) do not prove it yet, `daemon_set_of(name)` giving
    each one's DaemonSet; None once one of them does. A pod being deleted, an old one the
    upgrade is replacing, proves nothing."""
    reasons = []
    for pod in pods:
        if _meta(pod).get("deletionTimestamp"):
            continue
        owner = [str(o.get("name")) for o in _owners(pod) if o.get("kind") == "DaemonSet"]
        if not owner:
            reasons.append(f"driver pod {_meta(pod).get('name')} has no DaemonSet")
            continue
        reason = driver_pending(pod, daemon_set_of(owner[0]), nvidia_driver, image)
        if reason is None:
            return None
        reasons.append(reason)
    return reasons[0] if reasons else f"no NVIDIA driver pod on node {node} yet"


def _meta(obj: Object) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _labels(obj: Object) -> Mapping[str, str]:
    return _meta(obj).get("labels") or {}


def _owners(obj: Object) -> list[Mapping[str, Any]]:
    return list(_meta(obj).get("ownerReferences") or [])


def _driver_images(pod_spec: Mapping[str, Any]) -> list[str]:
    containers = pod_spec.get("containers") or []
    return [str(c.get("image")) for c in containers if c.get("name") == DRIVER_CONTAINER]


def _ready(pod: Object) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class Api:
    """GETs to the API server as the pod reaches it: its service's address, the token and CA
    projected for the gate's service account."""

    def __init__(self) -> None:
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        host = f"[{host}]" if ":" in host else host
        self.server = f"https://{host}:{os.environ['KUBERNETES_SERVICE_PORT']}"
        self.token = (TOKEN_DIR / "token").read_text().strip()
        context = ssl.create_default_context(cafile=str(TOKEN_DIR / "ca.crt"))
        # The API server only: no proxy from the environment sees the token.
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )

    def get(self, path: str) -> Any:
        request = urllib.request.Request(self.server + path)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        with self.opener.open(request, timeout=30) as response:
            return json.load(response)


def check(api: Api, namespace: str, node: str, nvidia_driver: str, image: str) -> str | None:
    query = urllib.parse.urlencode(
        {"labelSelector": DRIVER_POD_SELECTOR, "fieldSelector": f"spec.nodeName={node}"}
    )
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods?{query}").get("items") or []
    daemon_sets = f"/apis/apps/v1/namespaces/{namespace}/daemonsets/"
    return node_pending(
        pods,
        lambda name: api.get(daemon_sets + urllib.parse.quote(name)),
        nvidia_driver,
        image,
        node,
    )


def check_once_allowed(
    api: Api, namespace: str, node: str, nvidia_driver: str, image: str
) -> str | None:
    """`check`, a refusal (403) tried again a few times first: the API server's RBAC authorizer
    reads RoleBindings from an informer's cache (kubernetes pkg/kubeapiserver/authorizer,
    `rbac.New` over the shared informers' listers), which learns of the gate's RoleBinding a
    moment after it was created, and the gate's pod may start within that moment."""
    for _ in range(FORBIDDEN_RETRIES):
        try:
            return check(api, namespace, node, nvidia_driver, image)
        except urllib.error.HTTPError as error:
            if error.code != 403:
                raise
            print(f"the API server refuses the gate's service account: {error}; again", flush=True)
        time.sleep(FORBIDDEN_RETRY_SECONDS)
    return check(api, namespace, node, nvidia_driver, image)


def main() -> int:
    env = os.environ
    node, nvidia_driver, image = env["NODE_NAME"], env["NVIDIA_DRIVER"], env["NVIDIA_DRIVER_IMAGE"]
    try:
        api = Api()
    except OSError as error:
        return _failed(f"cannot read the gate's service account token or the cluster's CA: {error}")
    try:
        reason = check_once_allowed(api, env["POD_NAMESPACE"], node, nvidia_driver, image)
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            return _failed(f"the API server refuses the gate's service account: {error}")
        reason = f"the API server answered {error.code}"
    except urllib.error.URLError as error:
        if isinstance(error.reason, ssl.SSLCertVerificationError):
            return _failed(
                f"the API server's certificate does not verify against the cluster's CA"
                f" (kube-root-ca.crt): {error.reason}"
            )
        reason = f"could not ask the API server: {error}"
    except (OSError, ValueError) as error:
        reason = f"could not ask the API server: {error}"
    if reason is None:
        print(f"node {node} runs NVIDIADriver {nvidia_driver}'s current driver", flush=True)
        return 0
    print(f"{reason}; a new pod tries again", flush=True)
    time.sleep(RETRY_SECONDS)
    return PENDING_EXIT_CODE


def _failed(reason: str) -> int:
    print(f"{reason}; the gate fails", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())

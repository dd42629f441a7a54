"""A real OCI registry on loopback: Debian's `docker-registry` package, the CNCF distribution
server (v2.8.2 in Debian trixie), started on a free port with its storage in a temporary
directory, and images pushed to it through the distribution API ("Pushing blobs" and "Pushing
Manifests" of the OCI Distribution Specification v1.1.0) as `docker push` does.

Where the binary is missing the tests that need it are skipped, saying so, so that the suite
passes on a fresh machine; CI sets GPU_PLATFORM_REQUIRE_REGISTRY=1 (`.ci/run`) and they fail
instead.
"""

import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

REQUIRE_REGISTRY = "GPU_PLATFORM_REQUIRE_REGISTRY"
BINARY = "docker-registry"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def registry_binary() -> str:
    executable = shutil.which(BINARY)
    if executable is None:
        missing = (
            f"{BINARY} is not installed: install Debian's `docker-registry` package (apt-get"
            " install docker-registry) to run this test"
        )
        if os.environ.get(REQUIRE_REGISTRY) == "1":
            pytest.fail(f"{missing} ({REQUIRE_REGISTRY}=1)")
        pytest.skip(missing)
    return executable


@dataclass(frozen=True)
class Registry:
    """A running registry: `host` is `127.0.0.1:<port>`, asked over plain HTTP."""

    host: str

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def push_blob(self, name: str, content: bytes) -> dict[str, object]:
        """A blob uploaded in one request (POST then PUT with the digest), as a descriptor."""
        digest = sha256(content)
        started = requests.post(f"{self.url}/v2/{name}/blobs/uploads/", timeout=10)
        assert started.status_code == 202, started.text
        location = started.headers["Location"]
        if location.startswith("/"):
            location = self.url + location
        separator = "&" if "?" in location else "?"
        done = requests.put(
            f"{location}{separator}digest={digest}",
            data=content,
            headers={"Content-Type": "application/octet-stream"},
            timeout=10,
        )
        assert done.status_code == 201, done.text
        return {"digest": digest, "size": len(content)}

    def push_manifest(self, name: str, reference: str, media_type: str, body: bytes) -> str:
        """A manifest put under a tag or its digest; the digest the registry answers."""
        answer = requests.put(
            f"{self.url}/v2/{name}/manifests/{reference}",
            data=body,
            headers={"Content-Type": media_type},
            timeout=10,
        )
        assert answer.status_code == 201, answer.text
        return str(answer.headers["Docker-Content-Digest"])

    def push_image(self, name: str, tag: str | None, layer: bytes) -> bytes:
        """A one-layer image: its config blob, its layer and its manifest, under `tag` or, with
        None, its own digest; the manifest."""
        config = json.dumps({"architecture": "amd64", "os": "linux"}).encode()
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": {"mediaType": OCI_CONFIG, **self.push_blob(name, config)},
                "layers": [{"mediaType": OCI_LAYER, **self.push_blob(name, layer)}],
            }
        ).encode()
        self.push_manifest(name, tag or sha256(manifest), OCI_MANIFEST, manifest)
        return manifest

    def push_index(self, name: str, tag: str) -> bytes:
        """An image for amd64 and one for arm64, each by its digest, under an index tagged
        `tag`; the index."""
        platforms = []
        for architecture in ("amd64", "arm64"):
            manifest = self.push_image(name, None, architecture.encode())
            platforms.append((architecture, manifest))
        index = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_INDEX,
                "manifests": [
                    {
                        "mediaType": OCI_MANIFEST,
                        "digest": sha256(manifest),
                        "size": len(manifest),
                        "platform": {"architecture": architecture, "os": "linux"},
                    }
                    for architecture, manifest in platforms
                ],
            }
        ).encode()
        self.push_manifest(name, tag, OCI_INDEX, index)
        return index


def sha256(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


@contextmanager
def running_registry(storage: Path, private: bool = False) -> Iterator[Registry]:
    """The registry, serving from `storage` on a free loopback port until the block ends;
    `private`, one that wants a user's password for every call (`auth: htpasswd`, which
    writes a password file with a random one where none is, registry/auth/htpasswd/access.go
    at v2.8.2)."""
    executable = registry_binary()
    host = f"127.0.0.1:{free_port()}"
    config = storage / "config.yml"
    settings: dict[str, object] = {
        "version": 0.1,
        "log": {"level": "error"},
        "storage": {"filesystem": {"rootdirectory": str(storage / "data")}},
        "http": {"addr": host},
    }
    if private:
        settings["auth"] = {"htpasswd": {"realm": "private", "path": str(storage / "htpasswd")}}
    config.write_text(json.dumps(settings))  # YAML is a superset of JSON
    process = subprocess.Popen(
        [executable, "serve", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_until_up(Registry(host), process)
        yield Registry(host)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait_until_up(registry: Registry, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            assert process.stderr is not None
            raise AssertionError(f"{BINARY} exited: {process.stderr.read().decode()}")
        try:
            if requests.get(f"{registry.url}/v2/", timeout=1).status_code in (200, 401):
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{BINARY} did not answer on {registry.host} within 15 s")


@contextmanager
def silent_server() -> Iterator[str]:
    """A loopback server that accepts connections and never answers; its `host:port`."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"127.0.0.1:{server.getsockname()[1]}"


Answer = tuple[int, dict[str, str], bytes]


@contextmanager
def stand_in(answer: Callable[[http.server.BaseHTTPRequestHandler], Answer]) -> Iterator[str]:
    """A loopback HTTP server answering every request with `answer(request)`; its host."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def reply(self) -> None:
            status, headers, body = answer(self)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = reply

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

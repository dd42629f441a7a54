"""A loopback HTTP server standing in for COS's published driver facts: gke-to-cos.json and
each COS build's gpu_driver_versions.textproto, from test data written in their formats
(tests/gpu_platform/lock/data/), at the paths they have on their real hosts."""

import contextlib
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_platform.lock.cos import COS_TOOLS_URL_VARIABLE, GKE_TO_COS_URL_VARIABLE

DATA = Path(__file__).parent / "gpu_platform" / "lock" / "data"
MAP_PATH = "/gke-image-maps/gke-to-cos.json"


def driver_list_path(build: str) -> str:
    return f"/cos-tools/{build}/lakitu/gpu_driver_versions.textproto"


def published_files() -> dict[str, bytes]:
    """URL path -> body: the map, and the driver list of each build the test data has."""
    files = {MAP_PATH: (DATA / "gke-to-cos.json").read_bytes()}
    for build in ("18867.199.28", "19216.104.25", "19216.220.44"):
        files[driver_list_path(build)] = (DATA / f"{build}.textproto").read_bytes()
    return files


class _Handler(http.server.BaseHTTPRequestHandler):
    server: "_Server"

    def do_GET(self) -> None:
        self.server.requested.append(self.path)
        if self.path in self.server.hanging:
            self.server.released.wait(30)
            return
        body = self.server.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    files: dict[str, bytes]
    requested: list[str]
    hanging: set[str]
    released: threading.Event


@contextlib.contextmanager
def serving(
    files: dict[str, bytes],
    monkeypatch: pytest.MonkeyPatch,
    requested: list[str] | None = None,
    hanging: set[str] | None = None,
) -> Iterator[str]:
    """Serve `files` (changes to it show at once) on a free loopback port, and point the lock's
    COS sources at it; its base URL. Each path asked for is added to `requested`; a path in
    `hanging` is never answered."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.files = files
    server.requested = requested if requested is not None else []
    server.hanging = hanging or set()
    server.released = threading.Event()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv(GKE_TO_COS_URL_VARIABLE, base + MAP_PATH)
    monkeypatch.setenv(COS_TOOLS_URL_VARIABLE, base + "/cos-tools")
    try:
        yield base
    finally:
        server.released.set()
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def never_answering(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A loopback port that takes connections (the kernel completes the handshake of a listening
    socket) and never answers, as the map's source; its base URL."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        base = f"http://127.0.0.1:{listening.getsockname()[1]}"
        monkeypatch.setenv(GKE_TO_COS_URL_VARIABLE, base + MAP_PATH)
        yield base

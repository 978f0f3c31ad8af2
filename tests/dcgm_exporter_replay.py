"""A static GPU host for the live tests: serves, on ADDRESS, what node_exporter (port 9100) and
dcgm-exporter (port 9400) would have served at second ``now - start`` of a shared H200
recording (tests/dcgm_replay.py); ``start`` is the time the file START_FILE was written (the
test writes it once the monitor is polling); before it the first sample, after the
recording's end the last. Run inside a test host's network namespace:

    python3 tests/dcgm_exporter_replay.py CASE ADDRESS HOSTNAME START_FILE [--no-profiling]
"""

from __future__ import annotations

import os
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.dcgm_replay import GpuHostReplay  # noqa: E402
from tests.exposition_http import exposition_handler  # noqa: E402

NODE_PORT, DCGM_PORT = 9100, 9400


def started(start_file: str) -> float | None:
    try:
        return os.stat(start_file).st_mtime
    except OSError:
        return None


def serve(replay: GpuHostReplay, address: str, port: int, start_file: str) -> ThreadingHTTPServer:
    text = replay.node_text if port == NODE_PORT else replay.dcgm_text

    def body_for(path: str) -> bytes | None:
        if not path.startswith("/metrics"):
            return None
        start = started(start_file)
        elapsed = 0.0 if start is None else min(max(time.time() - start, 0.0), replay.duration)
        return text(elapsed).encode()

    Handler = exposition_handler(body_for)
    server = ThreadingHTTPServer((address, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    case, address, hostname, start_file = sys.argv[1:5]
    replay = GpuHostReplay(case, host=hostname, profiling="--no-profiling" not in sys.argv)
    servers = [serve(replay, address, port, start_file) for port in (NODE_PORT, DCGM_PORT)]
    print(f"{case}: {replay.duration:.1f} s, once {start_file} is written", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        for server in servers:
            server.shutdown()


if __name__ == "__main__":
    main()

"""Load test of `neardup serve` on loopback: queries per second and latency percentiles.

Builds (or reuses) an index of N random fingerprints, starts the service in a subprocess on a
free 127.0.0.1 port, sends a fixed number of `POST /v1/query` requests (half near-duplicates
of stored fingerprints, half random) over a bounded number of keep-alive connections with a
small raw asyncio HTTP/1.1 client (lighter than httpx, so the client takes less of the CPU the
server needs), then stops the server and prints q/s, p50, p99 and max. Bounded in count
(--requests) and time (--timeout); it sends traffic only to 127.0.0.1.

    python benchmarks/load_service.py --n 1000000 --requests 20000 --concurrency 16
    python benchmarks/load_service.py --n 1000000 --mode add --requests 5000
    taskset -c 0,1 python benchmarks/load_service.py ...   # pin server + client to 2 cores
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_index(path: Path, n: int, seed: int) -> np.ndarray:
    """An index of ``n`` random fingerprints at ``path`` (built once); returns them."""
    from neardup.index.store import NearDupIndex

    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    if not (path / "index.sqlite").exists():
        started = time.perf_counter()
        NearDupIndex.build(path, [f"doc{i}" for i in range(n)], fingerprints=fps).close()
        print(
            f"built index of {n:,} fingerprints in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return fps


def probes(fps: np.ndarray, count: int, seed: int) -> list[str]:
    """Half near-duplicates (1..3 bits flipped) of stored fingerprints, half random."""
    rng = np.random.default_rng(seed + 1)
    near = fps[rng.integers(0, fps.size, count // 2)].copy()
    for _ in range(3):
        flip = rng.random(near.size) < 0.7
        near[flip] ^= np.uint64(1) << rng.integers(0, 64, int(flip.sum())).astype(np.uint64)
    rand = rng.integers(0, 2**64, count - near.size, dtype=np.uint64)
    values = np.concatenate([near, rand])
    rng.shuffle(values)
    return [f"{int(v):016x}" for v in values]


async def run_load(
    port: int, bodies: list[bytes], path: str, concurrency: int, token: str | None, deadline: float
) -> tuple[list[float], int]:
    """Send every body once over ``concurrency`` keep-alive connections."""
    latencies: list[float] = []
    errors = 0
    queue = iter(bodies)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""

    async def worker():
        nonlocal errors
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for body in queue:
                if time.monotonic() > deadline:
                    break
                head = (
                    f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                )
                started = time.perf_counter()
                writer.write(head.encode() + body)
                status_line = await reader.readline()
                length = 0
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
                if not status_line.startswith(b"HTTP/1.1 200"):
                    errors += 1
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, errors


def wait_ready(port: int, proc: subprocess.Popen, timeout: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("server did not start in time")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="Fingerprints in the index.")
    parser.add_argument(
        "--index", default=None, help="Index directory to reuse (default: a temp dir)."
    )
    parser.add_argument("--requests", type=int, default=20_000, help="Requests to send (fixed).")
    parser.add_argument("--concurrency", type=int, default=16, help="Keep-alive connections.")
    parser.add_argument("--mode", choices=["query", "add"], default="query")
    parser.add_argument("--batch", type=int, default=1, help="Documents per request.")
    parser.add_argument("--token", default=None, help="Run the server with this bearer token.")
    parser.add_argument(
        "--timeout", type=float, default=180, help="Stop sending after this many seconds."
    )
    parser.add_argument(
        "--warmup", type=int, default=500, help="Requests sent first, not measured."
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--json", dest="json_out", default=None, help="Also write the figures as JSON."
    )
    args = parser.parse_args(argv)
    if not 1 <= args.concurrency <= 256:
        parser.error(f"--concurrency must be in 1..256, got {args.concurrency}")
    if not 1 <= args.requests <= 1_000_000:
        parser.error(f"--requests must be in 1..1000000, got {args.requests}")

    tmp = None
    if args.index:
        path = Path(args.index)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="neardup-load-")
        path = Path(tmp.name) / "idx"
    fps = ensure_index(path, args.n, args.seed)
    total = args.requests + args.warmup
    values = probes(fps, total * args.batch, args.seed)
    bodies = []
    for r in range(total):
        chunk = values[r * args.batch : (r + 1) * args.batch]
        if args.mode == "query":
            docs = [{"fingerprint": v} for v in chunk]
        else:
            docs = [
                {"id": f"load-{args.seed}-{r}-{j}-{time.time_ns()}", "fingerprint": v}
                for j, v in enumerate(chunk)
            ]
        body = docs[0] if args.batch == 1 else {"documents": docs}
        bodies.append(json.dumps(body).encode())

    port = free_port()
    env = dict(os.environ)
    if args.token:
        env["NEARDUP_TOKEN"] = args.token
    code = (
        "import sys; from neardup.index.service import serve; "
        "serve(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2]), token=sys.argv[3] or None, "
        "log_level='error')"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", code, str(path), str(port), args.token or ""], env=env
    )
    try:
        opened = time.perf_counter()
        wait_ready(port, server, timeout=120)
        ready_seconds = time.perf_counter() - opened
        endpoint = "/v1/query" if args.mode == "query" else "/v1/documents"
        deadline = time.monotonic() + args.timeout
        asyncio.run(
            run_load(port, bodies[: args.warmup], endpoint, args.concurrency, args.token, deadline)
        )
        started = time.perf_counter()
        latencies, errors = asyncio.run(
            run_load(port, bodies[args.warmup :], endpoint, args.concurrency, args.token, deadline)
        )
        elapsed = time.perf_counter() - started
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        if tmp is not None:
            tmp.cleanup()
    lat = np.array(latencies) * 1000
    result = {
        "mode": args.mode,
        "n": args.n,
        "requests": len(latencies),
        "documents_per_request": args.batch,
        "concurrency": args.concurrency,
        "errors": errors,
        "seconds": round(elapsed, 3),
        "requests_per_second": round(len(latencies) / elapsed, 1),
        "documents_per_second": round(len(latencies) * args.batch / elapsed, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 3),
        "p99_ms": round(float(np.percentile(lat, 99)), 3),
        "max_ms": round(float(lat.max()), 3),
        "server_start_seconds": round(ready_seconds, 2),
        "cpus": len(os.sched_getaffinity(0)),
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

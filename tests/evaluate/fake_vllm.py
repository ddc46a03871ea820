"""Stand-in for `vllm serve` in tests: accepts the same arguments and serves FakeOpenAIServer.

    python fake_vllm.py [serve] MODEL --port N [--host H] [--served-model-name S] [other vllm flags...]

Behaviour is chosen by the environment: FAKE_VLLM_MODE = ok (default) | crash (exit 3 at once) |
never_healthy (never listens) | ignore_sigterm (serves, but ignores SIGTERM); FAKE_VLLM_DELAY_S
delays the start; FAKE_VLLM_ARGV_FILE receives {"argv": [...], "pid": ...} as JSON.

Parallelism is checked the way vLLM checks it at start-up: ``--tensor-parallel-size`` and
``--data-parallel-size`` must be positive integers and their product (the GPUs the server takes)
at most ``FAKE_VLLM_GPUS`` (default 8, the GPUs of one A100 node); otherwise the stand-in exits
with status 1 before listening, naming what it was asked for and what the node has.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time


def main() -> int:
    argv = sys.argv[1:]
    if argv and argv[0] == "serve":
        argv = argv[1:]
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--tensor-parallel-size", type=int, default=1)
    p.add_argument("--data-parallel-size", type=int, default=1)
    args, _rest = p.parse_known_args(argv)
    out = os.environ.get("FAKE_VLLM_ARGV_FILE")
    if out:
        with open(out, "w") as fh:
            json.dump({"argv": sys.argv[1:], "pid": os.getpid()}, fh)
    mode = os.environ.get("FAKE_VLLM_MODE", "ok")
    print(f"fake vllm: mode={mode} model={args.model} port={args.port}", flush=True)
    if mode == "crash":
        print("fake vllm: CUDA out of memory (simulated)", flush=True)
        return 3
    tp, dp, gpus = args.tensor_parallel_size, args.data_parallel_size, int(os.environ.get("FAKE_VLLM_GPUS", "8"))
    if tp < 1 or dp < 1 or tp * dp > gpus:
        print(f"fake vllm: tensor_parallel_size={tp} x data_parallel_size={dp} needs {tp * dp} GPUs, "
              f"the node has {gpus}", flush=True)  # fmt: skip
        return 1
    print(f"fake vllm: {dp} replica(s) of {tp} GPU(s) each", flush=True)
    time.sleep(float(os.environ.get("FAKE_VLLM_DELAY_S", "0")))
    if mode == "never_healthy":
        while True:
            time.sleep(1)
    if mode == "ignore_sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    from tests.support.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(
        host="127.0.0.1", port=args.port, model_name=args.served_model_name or args.model, latency_s=0.01
    )
    server.start()
    print("fake vllm: ready", flush=True)
    try:
        while True:
            time.sleep(0.5)
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())

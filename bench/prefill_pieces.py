"""How the size of a prefill piece changes the GGUF reader's prefill speed on this CPU.

``reader/llama_cpp_chat.py`` feeds a prompt to llama.cpp in pieces with a stop check between
them; each piece reads all of the model's weights, so short pieces waste them. This times the
same prompt evaluated whole, in pieces of each size given, from an empty context each time
(rounds interleaved, so that a busy machine's load falls on every size alike).

    python bench/prefill_pieces.py MODEL.gguf [--tokens 256] [--sizes 8,16,32,64,128,256]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from benchlib import ROOT, write_report
from htmlrag_chat.reader.llama_cpp_chat import EXTRA_BUFFERS_ENV, MIN_PIECE, load_gguf

os.environ.setdefault(EXTRA_BUFFERS_ENV, "0")  # as the tests run it (reader/llama_cpp_chat.py)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--sizes", default="8,16,32,64,128,256")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/prefill_pieces.json")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    threads = len(os.sched_getaffinity(0))
    llama = load_gguf(str(args.model.resolve()), 4096, threads, 0)
    text = "The quick brown fox jumps over the lazy dog near the river bank. " * 200
    ids = llama.tokenize(text.encode(), add_bos=True)[: args.tokens]
    seconds: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(args.rounds):
        for size in sizes:
            llama.reset()
            start = time.perf_counter()
            for at in range(0, len(ids), size):
                llama.eval(ids[at : at + size])
            seconds[size].append(round(time.perf_counter() - start, 2))
            print(size, seconds[size][-1], flush=True)
    write_report(
        args.out,
        {
            "model": args.model.name,
            "tokens": len(ids),
            "threads": threads,
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "load_average": round(os.getloadavg()[0], 1),
            "min_piece": MIN_PIECE,
            "seconds": {str(size): runs for size, runs in seconds.items()},
        },
    )


if __name__ == "__main__":
    main()

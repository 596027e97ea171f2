"""tkchat's fixed window against the simplest Tk peer, on the same model, by turns.

The peer is woheller69/LLAMA_TK_CHAT (``LLAMA_TK_GUI.py``, MIT, 272 lines): plain text, each
token inserted from the worker thread (Tkinter hands the call to the main thread) and the
view moved with ``yview(END)`` and ``update_idletasks()``. It needs ``llama-cpp-agent`` and
``typer``; give it a Python that has them (a venv made with ``--system-site-packages``
shares this machine's llama-cpp-python)::

    python -m venv --system-site-packages /tmp/peer-venv
    /tmp/peer-venv/bin/pip install llama-cpp-agent typer
    git clone https://github.com/woheller69/LLAMA_TK_CHAT /tmp/peer
    python -m tests.tools.peer_lag --peer /tmp/peer/LLAMA_TK_GUI.py \\
        --peer-python /tmp/peer-venv/bin/python --runs 3

Each run: the peer, unchanged, asked the bench's question with an ``after(5)`` lag probe
injected into its window (how late each 5 ms timer fired while the answer streamed); then
``tkchat bench --modes fixed --no-clicks`` (whose window has the same 5 ms probe and, as the
peer's, no clicks), the idle window and the
shipped fixed window (the loop sampler on) and without the sampler, each answering as many
tokens as the peer's answer had (``--tokens`` to choose). One line per run and window: lag
p50 / p99 / max in ms, long tasks, tokens and tokens/s. Both use one thread for the model
(tkchat's default on 2 cores). Wall-clock figures: a developer's tool, never a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBE_MS = 5


def probe_peer(peer: Path, model: str, prompt: str, threads: int, out: Path) -> None:
    """(In the peer's Python.) Run the peer's window with the probe; write its figures."""
    import tkinter as tk

    sys.path.insert(0, str(peer.parent))
    module = __import__(peer.stem)
    gui = module.ChatGUI()
    lags: list[float] = []
    state = {"streaming": False, "started": 0.0}
    mainloop = tk.Tk.mainloop

    def probe(expected: float) -> None:
        if state["streaming"]:
            lags.append(max(0.0, (time.perf_counter() - expected) * 1000))
        gui.root.after(PROBE_MS, probe, time.perf_counter() + PROBE_MS / 1000)

    def ask() -> None:
        gui.input_text.insert("1.0", prompt)
        state["streaming"], state["started"] = True, time.perf_counter()
        gui.generate()  # what its Generate button does
        gui.root.after(50, watch)

    def watch() -> None:
        if gui.inference_thread is not None and gui.inference_thread.is_alive():
            gui.root.after(50, watch)
            return
        seconds = time.perf_counter() - state["started"]
        ordered = sorted(lags)
        figures = {
            "window": "peer",
            "lag_p50_ms": ordered[len(ordered) // 2],
            "lag_p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            "lag_max_ms": ordered[-1],
            "long_tasks": sum(lag > 50 for lag in ordered),
            "tokens": gui.token_count,
            "tokens_per_s": gui.token_count / seconds,  # prompt included, as tkchat's is not
        }
        out.write_text(json.dumps(figures))
        gui.root.destroy()

    def probed_mainloop(self: tk.Tk, n: int = 0) -> None:
        self.after(1000, ask)  # after its model has loaded (run() loads it before mainloop)
        self.after(PROBE_MS, probe, time.perf_counter() + PROBE_MS / 1000)
        mainloop(self, n)

    tk.Tk.mainloop = probed_mainloop  # type: ignore[method-assign,assignment]
    gui.opt(
        model_path=model,
        threads=threads,
        context=2048,
        temperature=0.65,
        sysprompt="You are a helpful assistant.",
        template="CHATML",
        mlock=False,
    )


def tkchat_rows(tokens: int) -> list[dict[str, object]]:
    """One ``tkchat bench --modes fixed`` run: its idle, fixed and fixed-unsampled rows."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "bench.json"
        command = [sys.executable, "-m", "tkchat", "bench", "--modes", "fixed"]
        command += ["--tokens", str(tokens), "--repeats", "1", "--cancels", "0"]
        command += ["--idle-seconds", "2", "--no-clicks", "--json", str(out)]
        subprocess.run(command, check=True, capture_output=True, timeout=600)
        runs = json.loads(out.read_text())["runs"]
    wanted = {"idle": "tkchat idle", "fixed": "tkchat", "fixed-unsampled": "tkchat, no sampler"}
    return [{**row, "window": wanted[row["mode"]]} for row in runs if row["mode"] in wanted]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peer", type=Path, required=True, help="its LLAMA_TK_GUI.py")
    parser.add_argument("--peer-python", default=sys.executable)
    parser.add_argument("--model", help="GGUF (default: the bundled model)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--tokens",
        type=int,
        help="tkchat's answer length (default: as long as the peer's answer in the same run: "
        "the worst frame of a longer answer is the worst of more frames)",
    )
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)  # the peer's side
    args = parser.parse_args()
    from tkchat.lab.bench.figures import BENCH_PROMPT

    if args.probe is not None:
        probe_peer(args.peer, args.model, BENCH_PROMPT, 1, args.probe)
        return
    from tkchat.lab.display import ensure_display

    screen = ensure_display()  # one screen for both windows, by turns
    if args.model is None:
        from tkchat.generate.model_file import bundled_model_path

        args.model = str(bundled_model_path())
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "peer.json"
            here = ["-m", "tests.tools.peer_lag", "--peer", str(args.peer)]
            command = [args.peer_python, *here, "--model", args.model, "--probe", str(out)]
            subprocess.run(command, check=True, capture_output=True, timeout=600)
            rows = [json.loads(out.read_text())]
        peer_tokens = rows[0]["tokens"]
        rows += tkchat_rows(args.tokens or (peer_tokens if isinstance(peer_tokens, int) else 256))
        for row in rows:
            tps = row.get("tokens_per_s")
            print(
                f"run {run}  {row['window']:<20} lag p50 {row['lag_p50_ms']:6.2f}"
                f"  p99 {row['lag_p99_ms']:6.2f}  max {row['lag_max_ms']:7.2f} ms"
                f"  long tasks {row['long_tasks']}"
                + (f"  {row['tokens']} tokens, {tps:.1f} tokens/s" if tps else ""),
                flush=True,
            )
    if screen is not None:
        screen.terminate()


if __name__ == "__main__":
    main()

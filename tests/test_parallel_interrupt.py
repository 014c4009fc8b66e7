"""Ctrl-C during a run on a process pool: no chunk starts after it, running ones stop.

A process pool moves submitted chunks into its call queue at once, where
``Future.cancel`` cannot reach them; when every chunk was submitted up front, an
interrupted run left the queued chunks to run before ``pool.shutdown()`` returned
(40-75 s for ``smc_abc``, whose chunks are whole chains), and the running ones ran to
their end. The child process below runs eight chunks of 30 steps of 0.1 s on two
workers (each step a safe point, ``parallel.check_stopped``), sends itself SIGINT once
two chunks have started, and shuts the pool down. The test checks, from the chunks' own
records, that none started after the interrupt and that the two running ones stopped
part way. The shutdown time is printed (``pytest -s``), not asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np

    from dpinfer import parallel

    LOG = sys.argv[1]
    SENT = []
    # (a library without safe points runs every step: the test then fails on its asserts)
    check_stopped = getattr(parallel, "check_stopped", lambda: None)


    def record(*words):
        with open(LOG, "a") as fh:
            fh.write(" ".join(map(repr, words)) + "\\n")


    def chunk(i, rng):
        record("start", i, time.time())
        steps = 0
        try:
            for _ in range(30):
                check_stopped()
                time.sleep(0.1)
                steps += 1
        finally:
            record("end", i, steps)
        return i


    def started():
        try:
            with open(LOG) as fh:
                return len(fh.read().split())
        except FileNotFoundError:
            return 0


    def interrupt_once_two_chunks_run():
        while started() < 6:  # two lines of three words
            time.sleep(0.01)
        time.sleep(0.2)
        SENT.append(time.time())
        os.kill(os.getpid(), signal.SIGINT)


    if __name__ == "__main__":
        pool = ProcessPoolExecutor(2)
        threading.Thread(target=interrupt_once_two_chunks_run, daemon=True).start()
        try:
            parallel.map_chunks(chunk, np.random.SeedSequence(0), 8, executor=pool)
            report = {"interrupted": False}
        except KeyboardInterrupt:
            caught = time.time()
            pool.shutdown()
            report = {"interrupted": True, "sent": SENT[0], "shutdown": time.time() - caught}
        print(json.dumps(report))
    """
)


def test_an_interrupt_leaves_no_queued_chunk_to_run_before_shutdown(tmp_path):
    script, log = tmp_path / "child.py", tmp_path / "starts.txt"
    script.write_text(CHILD)
    done = subprocess.run(
        [sys.executable, str(script), str(log)], capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["interrupted"], done.stderr
    records = [line.replace("'", "").split() for line in log.read_text().splitlines()]
    starts = {int(i): float(t) for kind, i, t in records if kind == "start"}
    steps = {int(i): int(n) for kind, i, n in records if kind == "end"}
    print(f"shutdown after the interrupt: {report['shutdown']:.2f} s; steps run: {steps}")
    after = sorted(i for i, t in starts.items() if t > report["sent"])
    assert after == [], f"chunks {after} started after the interrupt"
    assert sorted(starts) == sorted(steps) == [0, 1]  # the two running when it came
    assert all(n < 30 for n in steps.values()), f"running chunks did not stop: {steps}"

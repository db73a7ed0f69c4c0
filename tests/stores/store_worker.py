"""A worker process for the store suite: records a call tree into a shared session.

    python store_worker.py STORE_URL SESSION_ID BRANCHES START_AT [hold]

Waits until START_AT (a time.time() value, so several workers start together),
records BRANCHES ``branch`` tools each fanning out to 3 ``leaf`` tools on a
thread pool inside one turn, flushes, and prints ``turn_id`` and the flush result.
With ``hold`` it flushes and prints while still inside the turn, then sleeps
until killed (the turn is left running).
"""

from __future__ import annotations

import sys
import time

import openprogram


@openprogram.tool
def leaf(branch: int, i: int) -> str:
    return f"{branch}.{i}"


@openprogram.tool
def branch(n: int) -> list[str]:
    with openprogram.ContextThreadPoolExecutor(3) as pool:
        return list(pool.map(lambda i: leaf(n, i), range(3)))


def main() -> None:
    url, session_id, branches, start_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    hold = sys.argv[5:] == ["hold"]
    while time.time() < start_at:
        time.sleep(0.005)
    with openprogram.session_context(session_id, store=url, agent_id="worker") as h:
        for n in range(branches):
            branch(n)
        if hold:
            print(h.turn_id, openprogram.flush(), flush=True)
            time.sleep(600)
    print(h.turn_id, openprogram.flush(), flush=True)


if __name__ == "__main__":
    main()

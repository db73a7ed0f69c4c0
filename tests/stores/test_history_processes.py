"""``openprogram.history()`` read by another process than the one that recorded it, from SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import openprogram
from openprogram._kit import ModelCall, message, model_inputs, reply


def ask(sent: list[dict[str, str]], answer: str) -> dict[str, str]:
    call = ModelCall.request(
        "toy", "fake-model", lambda: model_inputs([message(m["role"], m["content"]) for m in sent])
    )
    with call:
        pass
    call.answered(reply(answer))
    return {"role": "assistant", "content": answer}


def test_another_process_reads_the_conversation_and_continues_it(durable_url: str) -> None:
    with openprogram.session_context(store=durable_url) as first:
        ask([{"role": "user", "content": "weather in Paris?"}], "sunny")
    openprogram.flush()
    script = textwrap.dedent(
        f"""
        import json, openprogram
        from openprogram._kit import ModelCall, message, model_inputs, reply
        before = openprogram.history({first.session_id!r}, store={durable_url!r})
        with openprogram.session_context({first.session_id!r}, store={durable_url!r}):
            sent = [*before, {{"role": "user", "content": "and Oslo?"}}]
            shaped = [message(m["role"], m["content"]) for m in sent]
            call = ModelCall.request("toy", "fake-model", lambda: model_inputs(shaped))
            with call:
                pass
            call.answered(reply("cloudy"))
        print(json.dumps(before))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=dict(os.environ), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "sunny"},
    ]
    assert openprogram.history(first.session_id, store=durable_url) == [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "sunny"},
        {"role": "user", "content": "and Oslo?"},
        {"role": "assistant", "content": "cloudy"},
    ]

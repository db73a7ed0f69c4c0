"""How ``store-schema-3.db`` was made, with openprogram at 78ae943 (its store schema 3).

    python make_store_schema_3.py PATH    # then VACUUM it in rollback-journal mode

A session of 20 model calls whose prompts grow by a tool request and its result each, stored
whole in every call's inputs, as that version stored them.
"""

import os
import sys

import openprogram
from openprogram import _kit


@openprogram.tool
def read(name: str) -> str:
    return f"contents of {name}"


def main(path: str) -> None:
    if os.path.exists(path):
        os.remove(path)
    history = [_kit.message("system", "You read files."), _kit.message("user", "read them all")]
    with openprogram.session_context("schema-3-session", store=f"sqlite:///{path}"):
        for i in range(20):
            call = _kit.ModelCall.request("fixture", "fake-model", lambda: _kit.model_inputs(list(history), ["read"]))
            answer = _kit.reply(None, tool_calls=[_kit.tool_call(f"c{i}", "read", {"name": f"f{i}"})])
            with call:
                pass
            call.answered(answer, _kit.usage(10, 2))
            history.append(_kit.message("assistant", None, tool_calls=answer["tool_calls"]))
            history.append(_kit.message("tool", read(f"f{i}"), tool_call_id=f"c{i}"))
    openprogram.flush()


if __name__ == "__main__":
    main(sys.argv[1])

"""capture_json on pydantic models, LangChain's messages among them (pydantic comes with LangGraph)."""

from __future__ import annotations

import json

import pydantic
from langchain_core.messages import AIMessage, HumanMessage
from openprogram._capture import capture, capture_json


def test_pydantic_models_seen_again_encode_as_the_careful_walk_does() -> None:
    class Plain(pydantic.BaseModel):
        name: str
        count: int = 0

    class Hiding(pydantic.BaseModel):
        name: str
        client: str = pydantic.Field(default="a client", exclude=True)

    class Open(pydantic.BaseModel, extra="allow"):
        name: str

    class Private(pydantic.BaseModel):
        name: str
        _cache: dict[str, int] = pydantic.PrivateAttr(default_factory=dict)

    class Outer(pydantic.BaseModel):
        inner: Plain
        items: list[Hiding]

    partial = Plain.model_construct(name="only a name")
    del partial.__dict__["count"]  # a field without a value
    reordered = Plain(name="b", count=2)
    reordered.__dict__.pop("name")
    reordered.__dict__["name"] = "b"  # the fields' values in another order than declared
    values = [
        Plain(name="a", count=1),
        Hiding(name="h"),
        Open.model_validate({"name": "o", "extra_field": 3}),
        Private(name="p"),
        Outer(inner=Plain(name="i"), items=[Hiding(name="x"), Hiding(name="y")]),
        partial,
        reordered,
    ]
    values += [HumanMessage("hi"), AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}])]
    for _ in range(2):  # the first time a class is met, and again (its fields known)
        for value in values:
            encoded = capture_json([value])
            assert encoded == json.dumps(capture([value]), separators=(",", ":")), value
            assert "a client" not in encoded and "_cache" not in encoded
    assert capture_json(reordered) == '{"name":"b","count":2}'
    assert capture_json(Outer(inner=Plain(name="i"), items=[])) == '{"inner":{"name":"i","count":0},"items":[]}'

#!/usr/bin/env python3
"""Writes the hostile Flight Recorder dumps of tests/hostile_dumps.rs. Run from this directory;
the files are committed. Each directory is one case, imported as a whole."""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "../../flight-recorder/fixtures")


def put(path, data):
    path = os.path.join(HERE, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


# values taken from below the last MARK: each opcode that pops, then the one closing the mark
BELOW_A_MARK = {
    "tuple2-then-list": b"\x80\x02K\x01K\x01(\x86l.",
    "tuple1-then-appends": b"\x80\x02]K\x01(\x85e.",
    "tuple2-then-setitems": b"\x80\x02}K\x01K\x02(\x86u.",
    "tuple1-then-dict": b"\x80\x02K\x01(\x85d.",
    "dup-then-pop-mark": b"\x80\x02K\x01(2(1.",
    "tuple3-then-pop-mark": b"\x80\x02K\x01K\x02K\x03(\x87\x31.",
    "tuple2-then-additems": b"\x80\x02\x8fK\x01(\x86\x90.",
}
for i, (name, data) in enumerate(sorted(BELOW_A_MARK.items())):
    put(f"below-a-mark/{name}_{i}", data)

# a valid dump of a 2-rank job (its pg_config lists the world as ranks 0-1) under names that
# claim other ranks
crash = fixture("pickle/crash_py_trace_0")
put("name-sizes-the-world/beyond-the-largest-world/trace_rank_99999999", crash)
put("name-sizes-the-world/a-million/trace_rank_1000000", crash)
put("name-sizes-the-world/outside-its-pg-config/trace_rank_1000", crash)
put("name-sizes-the-world/outside-another-dump/trace_rank_0", crash)
other = json.loads(fixture("dumps/crash_py/rank_1.json"))
del other["pg_config"]
put("name-sizes-the-world/outside-another-dump/trace_rank_5.json", json.dumps(other).encode())

# a real gloo dump (its pg_config unusable: a single entry with group-local ranks, so no table
# bounds the world) as ranks 0 and 999999: a million-rank world, 999998 ranks without a dump
gloo = fixture("../real/stopped_rank/pickle/rank_0")
put("far-beyond-the-dumps/rank_0", gloo)
put("far-beyond-the-dumps/rank_999999", gloo)

# text a terminal acts on, in every string of a dump that reaches the report
ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"
for r in (0, 1):
    d = json.loads(fixture(f"dumps/crash_py/rank_{r}.json"))
    d["version"] = "2.4" + ESC
    d["pg_config"]["0"]["name"] = "0"
    d["pg_config"]["0"]["desc"] = "default_pg"
    d["pg_config"]["9"] = {"name": "9\nCOMPLETED: nothing to see", "desc": ESC + "tp",
                           "ranks": "[0, 1]"}
    for e in d["entries"]:
        e["profiling_name"] = e["profiling_name"] + ESC
        e["frames"] = [{"name": "step" + ESC, "filename": "train" + ESC + ".py", "line": 7}]
    extra = dict(d["entries"][-1])
    extra["process_group"] = ["9\nCOMPLETED: nothing to see", ESC + "tp"]
    extra["collective_seq_id"] = 1
    extra["state"] = "scheduled"
    d["entries"].append(extra)
    put(f"escapes/rank_{r}.json", json.dumps(d).encode())

#!/usr/bin/env python3
"""Writes the hostile corpus of sim/tests/fuzz.rs: wire frames (wire/*.bin, length prefix
included) and Flight Recorder dumps (fr/*). Run from this directory; the files are committed."""
import json
import struct

HERE = __import__("os").path.dirname(__import__("os").path.abspath(__file__))


def put(path, data):
    with open(f"{HERE}/{path}", "wb") as f:
        f.write(data)


def u8(v): return struct.pack(">B", v)
def u32(v): return struct.pack(">I", v)
def u64(v): return struct.pack(">Q", v)


def frame(body):
    return u32(len(body)) + body


FP = json.dumps({"group": 0, "generation": 0, "seq": 1, "op": "allreduce",
                 "algorithm": "ring", "bytes": 8, "dtype": "f32", "root": 0,
                 "reduce": "sum", "elements": 2}, separators=(",", ":")).encode()


def header(ty=2, version=1):
    return u8(version) + u8(ty)


def envelope(msg, generation=0):
    return (header() + u64(7) + u32(1) + u32(0) + u32(generation) + u64(9) + u64(8) + u8(1)
            + msg)


def coll(fp=FP, buf=b"\x00" + u32(2) + struct.pack("<ff", 1.5, -2.0)):
    return u8(0) + u32(len(fp)) + fp + u32(0) + buf


valid = frame(envelope(coll()))
put("wire/valid_chunk.bin", valid)
put("wire/valid_hello.bin", frame(header(1) + u64(7) + u32(2) + u32(0)))
put("wire/truncated_chunk.bin", valid[: len(valid) // 2])
put("wire/oversized_frame.bin", u32(0xFFFFFFFF) + b"\x01\x02" * 8)
put("wire/just_over_the_limit.bin", u32((1 << 20) + 1) + b"\x01\x02")
put("wire/wrong_version.bin", frame(header(2, 9) + valid[6:]))
put("wire/unknown_frame_type.bin", frame(header(77)))
put("wire/http_request.bin", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
put("wire/huge_buffer_count.bin",
    frame(envelope(coll(buf=b"\x00" + u32(0xFFFFFFFF) + b"\x00" * 8))))
put("wire/huge_string_count.bin",
    frame(envelope(u8(2) + u8(2) + u32(0) + u32(0xFFFFFFF0) + b"todo")))
put("wire/fingerprint_not_json.bin", frame(envelope(coll(fp=b"\x00\xff{{"))))
put("wire/fingerprint_nested_deep.bin", frame(envelope(coll(fp=b"[" * 100_000))))
put("wire/group_name_not_utf8.bin",
    frame(envelope(u8(2) + u8(2) + u32(0) + u32(2) + b"\xff\xfe" + u32(1) + b"m")))
put("wire/proposal_out_of_order.bin",
    frame(envelope(u8(1) + u8(6) + u32(1) + u32(2) + u32(3) + u32(1) + u32(2) + u32(0) + u32(0)
                   + u32(0))))
put("wire/trailing_bytes.bin", frame(envelope(coll()) + b"\x00\x00"))
put("wire/boolean_byte_7.bin", frame(envelope(coll())[:-len(coll()) - 1] + u8(7) + coll()))
put("wire/zero_length.bin", u32(0))
put("wire/junk.bin", bytes((i * 151 + 7) % 256 for i in range(512)))

# Flight Recorder dumps
real = open(f"{HERE}/../../../tests/data/flight-recorder/real/stopped_rank/pickle/rank_0",
            "rb").read()
put("fr/truncated.pkl", real[: len(real) // 2])
put("fr/truncated_at_the_end.pkl", real[:-1])
put("fr/wrong_types.json", json.dumps(
    {"version": "2.10", "entries": [{"profiling_name": "nccl:all_reduce",
                                      "process_group": ["0", ""],
                                      "collective_seq_id": [1]}]}).encode())
put("fr/entries_a_dict.json", b'{"version": "2.10", "entries": {"a": 1}}')
put("fr/version_a_list.json", b'{"version": [2, 10], "entries": []}')
put("fr/nested_deep.json", b"[" * 100_000)
put("fr/nested_deep.pkl", b"\x80\x02" + b"(" * 100_000)
put("fr/string_claims_4gib.pkl", b"\x80\x02X\xff\xff\xff\xffabc.")
put("fr/bytes_claim_8eib.pkl", b"\x80\x04\x8e" + b"\xff" * 8 + b"abc.")
put("fr/frame_claims_8eib.pkl", b"\x80\x04\x95" + b"\xff" * 8 + b"N.")
# a shared reference repeated: a few hundred KB that would expand to 10^8 values
p = b"\x80\x02}(" + b"X\x07\x00\x00\x00entries" + b"](" + b"}q\x01("
p += b"X\x0e\x00\x00\x00profiling_nameX\x0f\x00\x00\x00nccl:all_reduce"
p += b"X\x11\x00\x00\x00collective_seq_idK\x01"
p += b"X\x0d\x00\x00\x00process_groupX\x01\x00\x00\x000"
p += b"X\x0b\x00\x00\x00input_sizes](]q\x02K\x01a" + b"h\x02" * 60_000
p += b"eu" + b"h\x01" * 1_999 + b"eu."
put("fr/shared_reference_bomb.pkl", p)
# more records than any recorder holds, one byte each (DUP)
p = b"\x80\x02}(" + b"X\x07\x00\x00\x00entries" + b"](}" + b"2" * 1_000_001 + b"eu."
put("fr/huge_list.pkl", p)
cmd = b"touch /tmp/ringside-pwned"
put("fr/global_reduce.pkl", b"\x80\x02cposix\nsystem\nq\x00X" + struct.pack("<I", len(cmd))
    + cmd + b"q\x01\x85q\x02Rq\x03.")
put("fr/stack_global.pkl", b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x02id\x85R.")
put("fr/reduce_without_global.pkl", b"\x80\x02X\x01\x00\x00\x00aX\x01\x00\x00\x00bR.")
put("fr/inst.pkl", b"(ios\nsystem\nS'id'\n.")
put("fr/obj.pkl", b"\x80\x02(X\x01\x00\x00\x00aX\x01\x00\x00\x00bo.")
put("fr/newobj.pkl", b"\x80\x02X\x01\x00\x00\x00a)\x81.")
put("fr/build.pkl", b"\x80\x02}}b.")
put("fr/persistent_id.pkl", b"\x80\x02X\x01\x00\x00\x00aQ.")
put("fr/not_a_dump.json", b'{"a": 1}')
put("fr/empty.json", b"")
put("fr/nul_bytes.pkl", b"\x80\x02" + b"\x00" * 64)
put("fr/junk.bin", bytes((i * 151 + 7) % 256 for i in range(512)))

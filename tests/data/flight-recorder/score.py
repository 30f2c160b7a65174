#!/usr/bin/env python3
"""Score `ringside import` against the ground truth of the Flight Recorder corpora.

How to run (Python 3.8+, standard library only):

    python3 tests/data/flight-recorder/score.py target/release/ringside
        [--corpus real|nccl] [--case NAME] [--form pickle|json|late/pickle|...] [--json]

For every case of `real/cases.json` and `nccl/cases.json` (next to this script) and every form
of its dumps that the index lists (pickle, json, and where present late/pickle, late/json,
mixed/pickle, mixed/json), it runs `ringside import --json <that folder>` and compares:

- root causes: the set ringside gives must equal the expected set (`deadlock:` ranks compare
  as a set);
- blocked ranks: every rank the truth says is blocked must be in ringside's `blocked`, and
  every rank ringside calls blocked must be blocked or possibly blocked by the truth
  (`blocked_maybe`: ranks the dumps cannot show either way);
- missing ranks: ringside's `missing` must equal the ranks without a dump.

A form scores 1 when all three hold. The table shows expected and got root causes and blocked
ranks per form, and whether ringside's `divergence` names the expected group and seq
(informational, not scored). The last lines give the score per corpus and in total. Exit
status 0 whatever the score; 2 on bad usage or a missing index.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPORA = ("real", "nccl")


def ranges(ranks):
    """[0, 1, 2, 5] -> '0-2,5'."""
    ranks = sorted(set(ranks))
    out = []
    i = 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}" if j > i + 1 else f"{ranks[i]},{ranks[j]}")
        i = j + 1
    return ",".join(out) or "-"


def canonical(cause):
    tag, _, rest = cause.partition(":")
    if tag == "deadlock":
        return "deadlock:" + ",".join(str(x) for x in sorted(int(r) for r in rest.split(",")))
    if tag == "partitioned":
        sides = sorted(sorted(int(r) for r in side.split(",")) for side in rest.split("|"))
        return "partitioned:" + "|".join(",".join(str(x) for x in s) for s in sides)
    return cause


def run_import(binary, folder):
    try:
        p = subprocess.run([binary, "import", "--json", folder], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "timed out after 300 s"
    except OSError as e:
        return None, f"cannot run {binary}: {e}"
    try:
        return json.loads(p.stdout), None
    except ValueError:
        err = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"exit {p.returncode}: {err[:160]}"


def divergence_of(got, want):
    """Whether ringside's divergence names the expected group (by members) and seq."""
    if not want or not isinstance(got, dict) or not got.get("divergence"):
        return "-" if not want else "none"
    d = got["divergence"]
    members = None
    for g in got.get("groups") or []:
        if g.get("id") == d.get("group"):
            members = g.get("members")
    seq_want = want.get("seq", want.get("p2p_seq"))
    same_group = members is None or sorted(members) == sorted(want.get("members", []))
    same_seq = seq_want is None or d.get("seq") == seq_want
    return "yes" if same_group and same_seq else f"#{d.get('seq')}"


def score_form(binary, case_dir, form, truth):
    folder = os.path.join(case_dir, form)
    got, err = run_import(binary, folder)
    want_rc = sorted(canonical(c) for c in truth["root_causes"])
    sure = set(truth["blocked"])
    maybe = sure | set(truth.get("blocked_maybe", []))
    row = {"form": form, "want_causes": want_rc, "want_blocked": sorted(sure), "maybe": sorted(maybe - sure)}
    if got is None:
        row.update(got_causes=None, got_blocked=None, causes_ok=False, blocked_ok=False, missing_ok=False,
                   error=err, divergence="-")
        return row
    got_rc = sorted(canonical(c) for c in got.get("root_causes", []))
    got_blocked = {b["rank"] for b in got.get("blocked", [])}
    got_missing = sorted(got.get("missing", []))
    row.update(
        got_causes=got_rc,
        got_blocked=sorted(got_blocked),
        causes_ok=got_rc == want_rc,
        blocked_ok=sure <= got_blocked <= maybe,
        missing_ok=got_missing == sorted(truth.get("missing", [])),
        got_missing=got_missing,
        error=None,
        divergence=divergence_of(got, truth.get("divergence")),
    )
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ringside", help="path of the ringside binary")
    ap.add_argument("--corpus", choices=CORPORA, action="append", help="only this corpus (repeatable)")
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    ap.add_argument("--form", action="append", help="only this form (repeatable), e.g. pickle, late/json")
    ap.add_argument("--json", action="store_true", help="print the rows and scores as one JSON object")
    args = ap.parse_args()
    binary = os.path.abspath(args.ringside)
    if not os.path.exists(binary):
        print(f"score.py: {args.ringside}: no such file", file=sys.stderr)
        return 2
    results = {}
    for corpus in args.corpus or CORPORA:
        index_path = os.path.join(HERE, corpus, "cases.json")
        try:
            with open(index_path) as f:
                index = json.load(f)
        except (OSError, ValueError) as e:
            print(f"score.py: {index_path}: {e}", file=sys.stderr)
            return 2
        rows = []
        for entry in index["cases"]:
            if args.case and entry["case"] not in args.case:
                continue
            for form, truth in entry["forms"].items():
                if args.form and form not in args.form:
                    continue
                row = score_form(binary, os.path.join(HERE, corpus, entry["case"]), form, truth)
                row["case"] = entry["case"]
                rows.append(row)
                if not args.json:
                    print_row(corpus, row)
        results[corpus] = rows
    totals = {}
    for corpus, rows in results.items():
        n = len(rows)
        totals[corpus] = {
            "forms": n,
            "right": sum(1 for r in rows if r["causes_ok"] and r["blocked_ok"] and r["missing_ok"]),
            "root_causes": sum(1 for r in rows if r["causes_ok"]),
            "blocked": sum(1 for r in rows if r["blocked_ok"]),
            "missing": sum(1 for r in rows if r["missing_ok"]),
        }
    all_n = sum(t["forms"] for t in totals.values())
    all_right = sum(t["right"] for t in totals.values())
    if args.json:
        print(json.dumps({"rows": results, "totals": totals, "score": [all_right, all_n]}, indent=1))
        return 0
    print()
    for corpus, t in totals.items():
        print(f"{corpus}: {t['right']}/{t['forms']} forms right (root causes {t['root_causes']}, blocked "
              f"{t['blocked']}, missing {t['missing']})")
    pct = 100.0 * all_right / all_n if all_n else 0.0
    print(f"score: {all_right}/{all_n} ({pct:.0f}%)")
    return 0


HEADER_DONE = []


def print_row(corpus, r):
    if not HEADER_DONE:
        print(f"{'case':<34} {'form':<12} {'':2} {'root causes: expected':<28} {'got':<34} {'':2} "
              f"{'blocked: expected':<18} {'got':<14} {'div':<5}")
        HEADER_DONE.append(True)
    ok = lambda b: "ok" if b else "XX"  # noqa: E731
    want_b = ranges(r["want_blocked"]) + (f" (+{ranges(r['maybe'])}?)" if r["maybe"] else "")
    if r["error"]:
        print(f"{corpus + '/' + r['case']:<34} {r['form']:<12} XX {','.join(r['want_causes']) or '-':<28} "
              f"ERROR {r['error']}")
        return
    got_rc = ",".join(r["got_causes"]) or "-"
    miss = "" if r["missing_ok"] else f"  missing got {ranges(r['got_missing'])}"
    print(f"{corpus + '/' + r['case']:<34} {r['form']:<12} {ok(r['causes_ok'])} "
          f"{','.join(r['want_causes']) or '-':<28} {got_rc[:34]:<34} {ok(r['blocked_ok'])} {want_b:<18} "
          f"{ranges(r['got_blocked']):<14} {r['divergence']:<5}{miss}")


if __name__ == "__main__":
    sys.exit(main())

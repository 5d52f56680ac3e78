"""Reads an OTF2 archive with OTF2's own Python reader (Debian's python3-otf2) and prints,
as JSON, what crates/cli/tests/cli/exports.rs checks against mpiscope's report: the
entries per region, the region roles, the collective begin/end pairs with what their ends
say, the communicators with their sizes, and the count of each point-to-point event."""

import json
import sys
from collections import Counter, defaultdict

import otf2


def enum_name(value):
    """`BCAST` of `CollectiveOp.BCAST`."""
    return str(value).split(".")[-1]


def main(path):
    enters = Counter()
    leaves = 0
    p2p = Counter()
    begins = 0
    ends = []
    stack = defaultdict(list)
    open_collectives = defaultdict(int)
    unpaired = 0
    with otf2.reader.open(path) as trace:
        defs = trace.definitions
        for loc, ev in trace.events:
            kind = type(ev).__name__
            if kind == "Enter":
                enters[ev.region.name] += 1
                stack[loc].append(ev.region.name)
            elif kind == "Leave":
                leaves += 1
                stack[loc].pop()
            elif kind == "MpiCollectiveBegin":
                begins += 1
                open_collectives[loc] += 1
            elif kind == "MpiCollectiveEnd":
                if open_collectives[loc] == 0:
                    unpaired += 1
                else:
                    open_collectives[loc] -= 1
                ends.append({
                    "region": stack[loc][-1],
                    "op": enum_name(ev.collective_op),
                    "comm": ev.communicator.name,
                    "comm_size": len(ev.communicator.group.members),
                    "root": ev.root,
                    "sent": ev.size_sent,
                    "received": ev.size_received,
                })
            else:
                p2p[kind] += 1
        out = {
            "enters": enters,
            "leaves": leaves,
            "collective_begins": begins,
            "collective_ends": ends,
            "unpaired_ends": unpaired + sum(open_collectives.values()),
            "p2p": p2p,
            "roles": {r.name: enum_name(r.region_role) for r in defs.regions},
            "sites": [
                {
                    "region": r.name,
                    "file": r.source_file,
                    "line": r.begin_line_number,
                }
                for r in defs.regions
            ],
            "comms": [{"name": c.name, "size": len(c.group.members)} for c in defs.comms],
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])

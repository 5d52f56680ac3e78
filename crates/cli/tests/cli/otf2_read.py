"""Reads an OTF2 archive with OTF2's own Python reader (Debian's python3-otf2) and prints,
as JSON, what crates/cli/tests/cli/exports.rs checks against mpiscope's report: the
entries per region, the region roles, the collective begin/end pairs with what their ends
say, the non-blocking collectives (request and completion), the communicators with their
sizes, the count of each point-to-point event, and the bytes of the send events and of the
collectives by the region that made them."""

import json
import sys
from collections import Counter, defaultdict

import otf2
import otf2.definitions

# python3-otf2 3.0 gives InterComm the fields of Comm followed by its own (name, group,
# parent, flags, groupA, groupB, parent, flags), so reading an InterComm definition looks
# its second group up as a communicator. The record is (name, groupA, groupB, common
# communicator, flags), as libotf2 and otf2-print read it.
_f = otf2.definitions.InterComm._fields
if [f.name for f in _f] == ["name", "group", "parent", "flags", "groupA", "groupB", "parent", "flags"]:
    otf2.definitions.InterComm._fields = (_f[0], _f[4], _f[5], _f[6], _f[7])


def enum_name(value):
    """`BCAST` of `CollectiveOp.BCAST`."""
    return str(value).split(".")[-1]


def collective(loc, ev, region):
    """What a collective's end (blocking or not) at location `loc` says."""
    comm = ev.communicator
    if type(comm).__name__ == "InterComm":
        size = len(comm.groupA.members) + len(comm.groupB.members)
    else:
        size = len(comm.group.members)
    return {
        "location": loc.name,
        "region": region,
        "op": enum_name(ev.collective_op),
        "comm": comm.name,
        "comm_size": size,
        "root": ev.root,
        "sent": ev.size_sent,
        "received": ev.size_received,
    }


def comm_def(c):
    """A communicator's name and size; an intercommunicator's two groups (world ranks)."""
    if type(c).__name__ == "InterComm":
        a, b = c.groupA.members, c.groupB.members
        return {"name": c.name, "size": len(a) + len(b), "inter": True,
                "groups": [[m.name for m in a], [m.name for m in b]]}
    return {"name": c.name, "size": len(c.group.members)}


def main(path):
    enters = Counter()
    sent_bytes = Counter()
    collective_bytes = defaultdict(lambda: [0, 0])
    nbc_requests = {}
    nbc = []
    unmatched_nbc = 0
    inter_p2p = []
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
                end = collective(loc, ev, stack[loc][-1])
                ends.append(end)
                collective_bytes[end["region"]][0] += end["sent"]
                collective_bytes[end["region"]][1] += end["received"]
            elif kind == "NonBlockingCollectiveRequest":
                nbc_requests[(loc, ev.request_id)] = stack[loc][-1]
            elif kind == "NonBlockingCollectiveComplete":
                region = nbc_requests.pop((loc, ev.request_id), None)
                if region is None:
                    unmatched_nbc += 1
                    continue
                end = collective(loc, ev, region)
                end["completed_in"] = stack[loc][-1]
                nbc.append(end)
                collective_bytes[region][0] += end["sent"]
                collective_bytes[region][1] += end["received"]
            else:
                p2p[kind] += 1
                if kind in ("MpiSend", "MpiIsend"):
                    sent_bytes[stack[loc][-1]] += ev.msg_length
                comm = getattr(ev, "communicator", None)
                if type(comm).__name__ == "InterComm":
                    inter_p2p.append({
                        "location": loc.name,
                        "kind": kind,
                        "peer": getattr(ev, "receiver", getattr(ev, "sender", None)),
                        "tag": ev.msg_tag,
                    })
        out = {
            "enters": enters,
            "leaves": leaves,
            "collective_begins": begins,
            "collective_ends": ends,
            "unpaired_ends": unpaired + sum(open_collectives.values()),
            "p2p": p2p,
            "nbc": nbc,
            "unmatched_nbc": unmatched_nbc + len(nbc_requests),
            "sent_bytes": sent_bytes,
            "inter_p2p": inter_p2p,
            "collective_bytes": collective_bytes,
            "roles": {r.name: enum_name(r.region_role) for r in defs.regions},
            "sites": [
                {
                    "region": r.name,
                    "file": r.source_file,
                    "line": r.begin_line_number,
                }
                for r in defs.regions
            ],
            "comms": [comm_def(c) for c in defs.comms],
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])

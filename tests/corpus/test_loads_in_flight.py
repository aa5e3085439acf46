"""scripts/loads_in_flight.py: the registers it reads from SASS and the loads it counts as in flight."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

import loads_in_flight as L  # noqa: E402

# one iteration's loads consumed one by one: the second load is issued after a use of the first one's data
SERIAL = [
    ".L_x_1:", "IMAD.MOV.U32 R8, RZ, RZ, -0x3ff0400 ;", "@P4 LDG.E.128 R8, desc[UR6][R32.64] ;",
    "HSETP2.GT.AND P2, P6, R9, R32, PT ;", "LEA R72, P4, R8, R6, 0x1 ;", "@P4 LDG.E.128 R8, desc[UR6][R72.64] ;",
    "FADD R21, R8, R21 ;", "@!P4 BRA `(.L_x_1) ;",
]
# both issued first; the address of the second is an IMAD.WIDE pair, not a load's register
TOGETHER = [
    ".L_x_1:", "@P3 LDG.E.128 R4, desc[UR8][R8.64] ;", "IMAD.WIDE.U32 R10, R10, UR6, RZ ;",
    "@P5 LDG.E.128 R12, desc[UR8][R10.64] ;", "HSETP2.GT.AND P4, P6, R6, R49, PT ;", "SEL R58, R13, R49, P4 ;",
    "@!P2 BRA `(.L_x_1) ;",
]


def test_reads_and_writes():
    assert L.reads_writes("@P4 LDG.E.128 R8, desc[UR6][R32.64] ;") == ("LDG.E.128", {32, 33}, {8, 9, 10, 11})
    assert L.reads_writes("HSETP2.GT.AND P2, P6, R9.reuse.H0_H0, -R32, PT ;") == ("HSETP2.GT.AND", {9, 32}, set())
    assert L.reads_writes("IMAD.WIDE.U32 R10, R48, R49, R6 ;") == ("IMAD.WIDE.U32", {48, 49, 6, 7}, {10, 11})
    assert L.reads_writes("STG.E.64 desc[UR4][R2.64], R4 ;") == ("STG.E.64", {2, 3, 4}, set())
    assert L.reads_writes("LDS.64 R4, [R2+0x10] ;") == ("LDS.64", {2}, {4, 5})


def test_loads_in_flight_per_loop():
    assert L.side_loops(SERIAL) == [{"loads": 2, "in_flight": 1, "instructions": 7}]
    assert L.side_loops(TOGETHER) == [{"loads": 2, "in_flight": 2, "instructions": 6}]


def test_a_write_into_a_pending_load_waits_too():
    body = ["LDG.E R4, desc[UR4][R2.64] ;", "MOV R4, RZ ;", "LDG.E R6, desc[UR4][R2.64+0x4] ;"]
    assert L.in_flight(body) == {"loads": 2, "in_flight": 1, "instructions": 3}


def test_fewer_only_where_ours_leaves_loads_waiting():
    ours = {"loops": [{"loads": 2, "in_flight": 1}, {"loads": 5, "in_flight": 5}]}
    tri = {"loops": [{"loads": 2, "in_flight": 2}, {"loads": 6, "in_flight": 6}]}
    assert L.compare(ours, tri) == [{"loop": 0, "ours": 1, "triton": 2}]

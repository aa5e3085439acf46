"""scripts/static_corpus.py: the loops it finds in a SASS listing and the flags it raises."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

import static_corpus as S  # noqa: E402

LISTING = [
    "MOV R1, c[0x0][0x28] ;", ".L_x_0:", "LDG.E.128 R4, desc[UR4][R2.64] ;", "BAR.SYNC.DEFER_BLOCKING 0x0 ;",
    "STS [R5], R6 ;", "LDS.128 R8, [R4] ;", "@P0 BRA `(.L_x_0) ;", ".L_x_1:", "FADD R1, R1, R2 ;",
    "@!P1 BRA `(.L_x_1) ;", "EXIT ;", ".L_x_2:", "BRA `(.L_x_2);",
]


def test_loops_close_at_backward_branches_and_count_barriers_and_shared_accesses():
    got = S.loops(LISTING)
    assert got == [{"instructions": 5, "barriers": 1, "shared": 2}, {"instructions": 2, "barriers": 0, "shared": 0}]


def test_flags_name_fewer_blocks_spills_and_heavier_loops():
    loop = {"instructions": 100, "barriers": 0, "shared": 0}
    tri = {"blocks": 2, "spills": 0, "loops": [loop]}
    ours = {"blocks": 1, "spills": 8, "loops": [{"instructions": 120, "barriers": 2, "shared": 3}]}
    assert S.flags(ours, tri) == ["blocks 1/2", "spills 8/0", "loop 0 barriers 2/0", "loop 0 120/100 instructions",
                                  "loop 0 shared 3/0"]
    assert S.flags(tri, tri) == []


def test_flags_name_an_opcode_issued_far_more_often():
    base = {"blocks": 2, "spills": 0, "loops": []}
    tri = {**base, "opcodes": {"FSETP": 320, "FSEL": 320}}
    ours = {**base, "opcodes": {"FSETP": 502, "FSEL": 380, "PLOP3": 238, "P2R": 26}}
    # FSEL: 60 more (under 64); P2R: 26 (under 64); FSETP 502 >= 1.5 x 320 and 182 more; PLOP3 none in Triton's
    assert S.flags(ours, tri) == ["FSETP 502/320", "PLOP3 238/0"]

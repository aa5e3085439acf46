"""Which ready job an idle worker takes: the shape it holds, else one no other worker is on."""
import collections

from farm.executor.affinity import input_key, pick
from farm.jobs import Job


def _job(n, meta, seed=0):
    return Job(key=f"{n}-{meta}-{seed}", idx=0, workload="vector_add", name="vector_add", params={"N": n},
               meta={"BLOCK": meta}, seed=seed)


def test_input_key_ignores_meta_but_not_shape_or_seed():
    assert input_key(_job(1, 256)) == input_key(_job(1, 1024))
    assert input_key(_job(1, 256)) != input_key(_job(2, 256))
    assert input_key(_job(1, 256)) != input_key(_job(1, 256, seed=1))


def test_pick_prefers_own_shape_then_an_unheld_one():
    ready = collections.deque((_job(n, m), None) for n in (1, 2, 3) for m in (256, 512))
    assert pick(ready, input_key(_job(2, 0)), set()) == 2           # its own shape first
    assert pick(ready, None, {input_key(_job(1, 0))}) == 2          # shape 1 is another worker's
    both = {input_key(_job(1, 0)), input_key(_job(2, 0))}
    assert pick(ready, None, both) == 4
    assert pick(ready, None, {input_key(_job(n, 0)) for n in (1, 2, 3)}) == 0  # everything held: the first
    assert pick(collections.deque(), None, set()) == 0

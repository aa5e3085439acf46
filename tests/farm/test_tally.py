"""The run summary splits wall time into start-up (until a worker got the first job) and the steady rate."""
from farm.runner import Tally


def test_phases_split_start_up_from_steady_rate():
    t = Tally(total=4, started=100.0)
    assert t.phases() == ""  # nothing ran yet
    t.first_start, t.last_done, t.done = 103.0, 105.0, 4
    assert t.phases() == "start-up 3.0 s, then 2.00 jobs/s"

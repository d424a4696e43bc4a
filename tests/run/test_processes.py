"""run.processes.together: a user error on one process is raised on every process; a bug
keeps its own exception (and traceback) where it happened, the others are told which
process stopped.  Two processes are played by a stand-in communicator whose other
process answers what the test says."""

import pytest

from hybridtree.errors import HybridtreeError
from hybridtree.parallel.comm import CollectiveError
from hybridtree.run.processes import RunError, together


class TwoProcesses:
    """Process 0 of two; the other process's contributions to allgather, in order."""

    size, rank = 2, 0

    def __init__(self, *other):
        self.other = list(other)

    def allgather(self, value):
        return [value, self.other.pop(0)]


def test_a_result_when_no_process_fails():
    assert together(TwoProcesses(False, None), lambda x: 2 * x, 21) == 42


@pytest.mark.parametrize("error", [RunError("no such folder"), ValueError("N must be > 0"),
                                   FileNotFoundError("x.hdf5")])
def test_a_user_error_here_is_raised_as_a_collective_error(error):
    def fail():
        raise error
    with pytest.raises(CollectiveError, match=str(error).split()[0]) as caught:
        together(TwoProcesses(False, None), fail)
    assert isinstance(caught.value, HybridtreeError)


def test_a_user_error_on_another_process_is_raised_here_naming_it():
    with pytest.raises(CollectiveError, match=r"bad input \(process 1 of 2\)"):
        together(TwoProcesses(False, "bad input"), lambda: None)


def test_a_bug_keeps_its_own_exception():
    def bug():
        raise TypeError("unsupported operand")
    with pytest.raises(TypeError, match="unsupported operand"):
        together(TwoProcesses(False), bug)


def test_a_bug_on_another_process_is_no_user_error_here():
    with pytest.raises(RuntimeError, match="process 1 of 2 stopped on a bug") as caught:
        together(TwoProcesses(True), lambda: None)
    assert not isinstance(caught.value, HybridtreeError)

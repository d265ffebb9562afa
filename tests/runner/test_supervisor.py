"""The supervisor's hand-over of a task to a worker fork."""

from __future__ import annotations

import signal

import pytest

from linbench.runner.supervisor import _sigint_deferred


def test_ctrl_c_during_the_hand_over_is_raised_once_it_is_complete() -> None:
    reached_end_of_block = False
    with pytest.raises(KeyboardInterrupt), _sigint_deferred():
        signal.raise_signal(signal.SIGINT)
        reached_end_of_block = True
    assert reached_end_of_block
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_no_ctrl_c_means_nothing_is_raised() -> None:
    with _sigint_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

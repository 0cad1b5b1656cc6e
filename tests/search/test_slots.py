"""The run's sandbox slots: no more held at once than allowed, and the most that were."""

from __future__ import annotations

import threading

from sprout.search.slots import Slots


def test_slots_count_the_most_held_at_once_and_hold_no_more_than_allowed() -> None:
    slots = Slots(2)
    assert slots.peak == 0
    entered = threading.Event()

    def third() -> None:
        with slots:
            entered.set()

    with slots:
        with slots:
            waiting = threading.Thread(target=third)
            waiting.start()
            assert not entered.wait(0.2), "a third entered while two were held"
        assert entered.wait(5), "the third entered once one was free"
        waiting.join()
    assert slots.peak == 2
    with slots:
        pass
    assert slots.peak == 2, "the most at once, not the last"

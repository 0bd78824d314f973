"""inventory.snapshot.gc_paused: the collector is off while a large cluster is built, and what
was built does not cost the young collections a walk afterwards, yet garbage is still found."""

from __future__ import annotations

import gc
import weakref

from inventory.snapshot import gc_paused


class Node:
    pass


def test_the_collector_is_off_inside_and_on_again_after():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: the inner one does not switch it back on
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_what_the_pause_built_waits_in_the_oldest_generation():
    with gc_paused():
        held = [[i] for i in range(20_000)]
    # Not 20,000 young objects for the next collection to walk.
    assert gc.get_count()[0] < 1_000
    assert any(obj is held for obj in gc.get_objects(generation=2))


def test_a_cycle_made_during_the_pause_is_still_collected():
    with gc_paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
    assert gone() is not None  # only a collection frees a cycle
    gc.collect()
    assert gone() is None


def test_a_collector_switched_off_by_someone_else_stays_off():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()

"""The cyclic collector is paused inside engine stages and restored after, however they end."""

import gc

import pytest

from engine.gcpause import paused_gc


@paused_gc
def _inner():
    return gc.isenabled()


@paused_gc
def _outer():
    inside = _inner()
    return inside, gc.isenabled()


@paused_gc
def _fails():
    raise ValueError("boom")


def test_nested_stages_keep_it_paused_and_the_outermost_restores_it():
    assert gc.isenabled()
    assert _outer() == (False, False)
    assert gc.isenabled()


def test_an_exception_restores_it():
    with pytest.raises(ValueError):
        _fails()
    assert gc.isenabled()


def test_a_caller_that_switched_it_off_finds_it_off():
    gc.disable()
    try:
        assert _inner() is False
        assert not gc.isenabled()
    finally:
        gc.enable()

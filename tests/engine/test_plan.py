"""Plan files: round trips, atomic writes, and loaders that reject bad input in one line."""

import dataclasses
import json
import os
import stat

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from engine.alloc import ALLOCATORS, allocate
from engine.base.errors import InterpreterError, RegtuneError
from engine.check.verify import static_conflicts, verify_execution
from engine.ir.core import print_program
from engine.ir.parser import parse
from engine.plan import Figures, Plan
from engine.planfile import FORMAT, load_plan, plan_from_dict, plan_to_dict, write_plan
from engine.predict import planned_and_run, predicted_plan
from tests.engine.strategies import examples, programs
from tests.engine.test_ir import DESIGN_EXAMPLE


@pytest.fixture
def plan():
    return planned_and_run(allocate("chaitin-briggs", parse(DESIGN_EXAMPLE), 8))


def test_round_trip_through_a_file(tmp_path, plan):
    path = write_plan(plan, tmp_path / "p.json")
    assert load_plan(path) == plan
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["version"] == 1
    assert data["program"] == print_program(plan.program)
    assert list(data["assignment"]) == list(plan.program.values)[: len(data["assignment"])]


def test_write_is_atomic_and_leaves_no_temporary(tmp_path, plan):
    path = tmp_path / "p.json"
    path.write_text("old contents")
    unserialisable = plan.with_(workload={"bad": object()})
    with pytest.raises(TypeError):
        write_plan(unserialisable, path)
    assert path.read_text() == "old contents"
    assert os.listdir(tmp_path) == ["p.json"]


def _good(plan):
    return plan_to_dict(plan)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(format="other"), "field 'format' must be 'regtune-plan', got 'other'"),
        (lambda d: d.update(version=2), "unsupported plan version 2"),
        (lambda d: d.update(version=1.0), "unsupported plan version 1.0 (this RegTune reads 1)"),
        (lambda d: d.update(version="1"), "unsupported plan version '1'"),
        (lambda d: d.update(version=True), "unsupported plan version true"),
        (lambda d: d.pop("budget"), "missing field 'budget'"),
        (lambda d: d.update(budget=True), "field 'budget' must be an integer, got true"),
        (lambda d: d.update(budget=0), "field 'budget' must be an integer in 1..255 (registers per thread), got 0"),
        (lambda d: d.update(program=".kernel k\n.block b\n  %x:f99 = mov 1\n"), "field 'program' line 3: unknown type 'f99' of %x"),
        (lambda d: d["assignment"].update(a_0_0=[1.5]), "assignment of %a_0_0 must be a list of one or two register numbers in 0..254, got [1.5]"),
        (lambda d: d["assignment"].update(a_0_0=[9]), "%a_0_0 is in R9, outside the budget of 8 registers (R0-R7)"),
        (lambda d: d["assignment"].update(pa=[1, 2]), "%pa is 64-bit and needs an even-aligned pair, not R1:R2"),
        (lambda d: d["assignment"].update(pa=[0]), "%pa is 2 register(s) wide but has 1"),
        (lambda d: d["assignment"].pop("pc"), "%pc has no register"),
        (lambda d: d["assignment"].update(ghost=[0]), "%ghost has a register but the program never defines it"),
        (lambda d: d["spills"].update(a_0_0=-1), "spill slot of %a_0_0 must be an integer in 0..131071, got -1"),
        (lambda d: d["spills"].update(ghost=3), "spill slot 3 is for %ghost, which the program never defines"),
        (lambda d: d["predicted"].update(maxlive=-1), "field 'predicted': figure 'maxlive' must be an integer >= 0, got -1"),
        (lambda d: d["predicted"].pop("moves"), "field 'predicted': missing figure 'moves'"),
        (lambda d: d["predicted"].update(speed=1), "field 'predicted': unknown figure 'speed'"),
        (lambda d: d["predicted"].pop("spill_loads_executed"), "field 'predicted': the executed spill figures must be"),
        (lambda d: d.update(measured={"registers": 9}), "field 'measured' must be empty ({}) where present"),
        (lambda d: d.update(measured=[]), "field 'measured' must be empty ({}) where present: a plan file holds no measured figures (the build report does), got []"),
    ],
)
def test_bad_fields_are_named(tmp_path, plan, mutate, message):
    data = _good(plan)
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RegtuneError) as err:
        load_plan(path)
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_files_carry_no_measured_field_and_old_files_with_an_empty_one_still_load(tmp_path, plan):
    """RegTune never wrote measured figures into a plan: issue 20 dropped the always-empty field from files."""
    data = _good(plan)
    assert "measured" not in data and list(data)[-1] == "predicted"
    path = tmp_path / "old.json"
    path.write_text(json.dumps({**data, "measured": {}}))
    assert load_plan(path) == plan


def test_figures_cross_the_file_as_a_dict_and_come_back_typed(plan):
    assert isinstance(plan.predicted, Figures) and plan.predicted.executed
    data = _good(plan)["predicted"]
    optional = ("executed_note", "rematerialised_values", "remat_instructions")  # the plan rematerialises nothing
    assert list(data) == [f.name for f in dataclasses.fields(Figures) if f.name not in optional]
    assert Figures.from_dict(data) == plan.predicted
    remat = dataclasses.replace(plan.predicted, rematerialised_values=2, remat_instructions=5)
    assert remat.to_dict()["remat_instructions"] == 5 and Figures.from_dict(remat.to_dict()) == remat
    assert plan_from_dict({**_good(plan), "predicted": {}}).predicted is None
    failed = dataclasses.replace(plan.predicted, spill_stores_executed=None, spill_loads_executed=None,
                                 executed_note="step limit")
    assert list(failed.to_dict())[-3:] == ["spill_stores_executed", "spill_loads_executed", "executed_note"]
    assert Figures.from_dict(failed.to_dict()) == failed


def test_shared_register_names_values_instruction_and_register(tmp_path, plan):
    data = _good(plan)
    data["assignment"]["b_0_0"] = data["assignment"]["a_0_0"]
    reg = data["assignment"]["a_0_0"][0]
    path = tmp_path / "clash.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RegtuneError, match=rf"%a_0_0 and %b_0_0 share R{reg} while both live at instruction 4 \(%b_0_0:f32 = ld.global %pb, 0\)"):
        load_plan(path)


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(RegtuneError, match="nothing.json: no such file"):
        load_plan(tmp_path / "nothing.json")
    (tmp_path / "t.json").write_text('{"format": ')
    with pytest.raises(RegtuneError, match=r"t.json: not valid JSON: Expecting value: line 1 column 12"):
        load_plan(tmp_path / "t.json")


@pytest.mark.parametrize("old, new, key", [
    ('"budget": ', '"budget": 255, "budget": ', "budget"),
    ('"a_0_0": [', '"a_0_0": [5], "a_0_0": [', "assignment.a_0_0"),
    ('"kind": "gemm"', '"kind": "mha", "kind": "gemm"', "workload.kind"),
])
def test_a_key_twice_is_named_by_its_path(tmp_path, plan, old, new, key):
    """JSON readers keep the last of two equal keys; a plan file that names one twice is refused instead."""
    data = _good(plan)
    data["workload"] = {"kind": "gemm", "m": 2, "n": 2, "k": 2, "dtype": "f32"}
    text = json.dumps(data)
    assert old in text
    path = tmp_path / "twice.json"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(RegtuneError) as err:
        load_plan(path)
    assert str(err.value) == f"{path}: duplicate key {key!r} (each key may appear once in a JSON object)"
    path.write_text(text)
    assert load_plan(path).assignment == plan.assignment       # the same text with each key once loads


def _mutations(data: dict):
    """Strategies that damage a plan's JSON object in the ways files get damaged."""
    keys = sorted(data)
    junk = st.recursive(st.none() | st.booleans() | st.integers(-10, 300) | st.floats(allow_nan=False) | st.text(max_size=8),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                        max_leaves=6)
    replace = st.tuples(st.just("replace"), st.sampled_from(keys), junk)
    drop = st.tuples(st.just("drop"), st.sampled_from(keys), st.none())
    reg = st.tuples(st.just("register"), st.sampled_from(sorted(data["assignment"])), st.lists(st.integers(-2, 12), max_size=3))
    text = st.tuples(st.just("text"), st.integers(0, len(data["program"])), st.sampled_from(["", "%", "=", "\n", ":f32", "@", ","]))
    return st.lists(st.one_of(replace, drop, reg, text), min_size=1, max_size=4)


def _apply(data: dict, mutation) -> dict:
    data = json.loads(json.dumps(data))
    for kind, where, what in mutation:
        if kind == "replace":
            data[where] = what
        elif kind == "drop":
            data.pop(where, None)
        elif kind == "register" and isinstance(data.get("assignment"), dict):
            data["assignment"][where] = what
        elif kind == "text" and isinstance(data.get("program"), str):
            data["program"] = data["program"][:where] + what + data["program"][where + 1 :]
    return data


BASE = plan_to_dict(planned_and_run(allocate("dsatur", parse(DESIGN_EXAMPLE), 8)))


@given(_mutations(BASE))
def test_fuzzed_plan_objects_load_and_verify_or_are_rejected_with_a_named_fault(mutation):
    data = _apply(BASE, mutation)
    try:
        plan = plan_from_dict(data, "fuzz.json")
    except RegtuneError as exc:
        event("rejected")
        assert str(exc).startswith("fuzz.json")
        assert "\n" not in str(exc)
        return
    event("accepted")
    assert static_conflicts(plan.program, plan.assignment, plan.spills, plan.budget) == []
    verify_execution(plan.program, plan.assignment, plan.spills)


@given(st.integers(0, len(json.dumps(BASE))), st.binary(max_size=4))
def test_truncated_or_garbled_files_are_rejected_in_one_line(tmp_path_factory, cut, noise):
    path = tmp_path_factory.mktemp("fuzz") / "cut.json"
    path.write_bytes(json.dumps(BASE).encode()[:cut] + noise)
    try:
        load_plan(path)
    except RegtuneError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc)


@given(programs(), st.integers(0, 400), st.sampled_from(["", "%", "=", ",", "@%", ":u64", "\n", ".block x\n", "br q\n", "1", "2", " ", "\n\n"]))
def test_fuzzed_program_texts_parse_or_raise_a_regtune_error(program, at, insert):
    text = print_program(program)
    text = text[:at] + insert + text[at + 1 :]
    try:
        parsed = parse(text, "fuzz.txt")
    except RegtuneError as exc:
        event("rejected")
        assert str(exc).startswith("fuzz.txt") and "\n" not in str(exc)
        return
    event("parsed")
    assert parse(print_program(parsed)) == parsed
    if _undefined(parsed):
        return
    plan = predicted_plan(allocate("linear-scan", parsed, 16))
    try:
        verify_execution(plan.program, plan.assignment, plan.spills, max_steps=20_000)
    except InterpreterError as exc:  # a mutation can make a loop endless: a named error, not a crash
        assert "step limit of 20000 instructions reached at instruction" in str(exc)


def _undefined(program):
    from engine.analysis.liveness import analyze

    return analyze(program).undefined


def test_plan_is_a_value(plan):
    assert plan == Plan(plan.program, dict(plan.assignment), dict(plan.spills), plan.budget, plan.allocator,
                        predicted=dataclasses.replace(plan.predicted))


def test_written_files_honour_the_umask_and_leave_no_temporary(tmp_path):
    from engine.base.files import TMP_SUFFIX, write_text_atomic

    path = tmp_path / "plan.json"
    path.write_text("old")
    path.chmod(0o600)
    old = os.umask(0o022)
    try:
        write_text_atomic(path, "new")
    finally:
        os.umask(old)
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert not list(tmp_path.glob(f"*{TMP_SUFFIX}"))


def test_a_write_that_was_killed_halfway_is_cleaned_up_by_the_next(tmp_path):
    from engine.base.files import TMP_SUFFIX, write_text_atomic

    path = tmp_path / "plan.json"
    dead = tmp_path / f".plan.json.{2 ** 22 + 12345}.0badc0de{TMP_SUFFIX}"      # no process has this id
    alive = tmp_path / f".plan.json.{os.getpid()}.feedf00d{TMP_SUFFIX}"         # a write of ours, in progress
    dead.write_text("half")
    alive.write_text("half")
    write_text_atomic(path, "whole")
    assert not dead.exists() and alive.exists() and path.read_text() == "whole"


def test_files_written_together_appear_together_and_leave_no_staging(tmp_path):
    from engine.base.files import write_files_atomic

    stale = tmp_path / ".regtune-files.999999999.0000.regtune-tmp"     # a killed writer's (no such process)
    stale.mkdir()
    (stale / "a.txt").write_text("half")
    (tmp_path / "a.txt").write_text("old")
    paths = write_files_atomic(tmp_path, {"a.txt": "new a", "b.txt": "new b"})
    assert paths == [tmp_path / "a.txt", tmp_path / "b.txt"]
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]
    assert (tmp_path / "a.txt").read_text() == "new a" and (tmp_path / "b.txt").read_text() == "new b"


def test_a_failed_rename_takes_back_the_files_already_placed(tmp_path):
    """The last rename fails (its target is a folder that is not empty): the first file, already renamed into
    place, is removed again, so the folder holds none of the write's files and no staging folder."""
    from engine.base.errors import WriteError
    from engine.base.files import write_files_atomic

    (tmp_path / "b.txt").mkdir()
    (tmp_path / "b.txt" / "keep").write_text("x")
    with pytest.raises(WriteError) as err:
        write_files_atomic(tmp_path, {"a.txt": "a", "b.txt": "b"})
    assert str(err.value) == (f"{tmp_path / 'b.txt'}: cannot write: is a directory (none of the 2 files was kept: "
                              "they are written all together or not at all)")
    assert os.listdir(tmp_path) == ["b.txt"] and os.listdir(tmp_path / "b.txt") == ["keep"]
    assert isinstance(err.value, OSError) and isinstance(err.value, RegtuneError)


@settings(max_examples=examples(60), deadline=None)
@given(programs(), st.sampled_from(sorted(ALLOCATORS)), st.sampled_from([255, 10, 6]))
def test_the_loader_accepts_every_plan_an_allocator_writes(program, name, budget):
    """``allocate`` and ``check`` accept the same plans: an allocator's plan, spill code included, parses back
    under the parser's rules (engine.ir.rules) and passes every check of the loader."""
    plan = allocate(name, program, budget).plan()
    event(f"spilled: {bool(plan.spills)}")
    assert plan_from_dict(plan_to_dict(plan), "allocated.json") == plan

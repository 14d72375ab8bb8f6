"""Workloads: the GEMM and MHA config spaces and their per-thread programs.

Invariant: a workload and its options determine the program completely
(same inputs, same text), and value names are derived from the workload
(``a_i_k``, ``b_k_j``, ``acc_i_j``, ``q_g_d``, ``o_g_d``, ``m_g``, ``l_g``), so a
hand edit keyed by name survives rebuilding the program. A workload read
from a file passes :func:`check_workload` first: every field typed and
inside the config space, so nothing a file says reaches generated code as
text.
"""

from __future__ import annotations

from engine import fields
from engine.errors import PlanError
from engine.inputs import GENERIC, InputModel
from engine.ir import is_name


def _kinds() -> dict:
    """Workload kind -> (module, config class): each module supplies ``check_options`` and ``input_model``."""
    from engine.workloads import gemm, mha

    return {"gemm": (gemm, gemm.Gemm), "mha": (mha, mha.Mha)}


def _program_workload(data: dict, options: dict, where: str, owhere: str) -> tuple[dict, dict]:
    """A plan made from a program file: the kernel's name and the file it came from."""
    from engine.arch import ARCHS

    fields.exact_keys(data, ("kind", "name", "source"), where, required=("kind",))
    out = {"kind": "program"}
    if "name" in data:
        value = data["name"]
        if not isinstance(value, str) or not is_name(value):
            raise PlanError(f"{where}: field 'name' must be a kernel name, got {fields.excerpt(value)}")
        out["name"] = value
    if "source" in data:
        out["source"] = fields.text(data, "source", where)
    fields.exact_keys(options, ("arch",), owhere)
    opts = {"arch": fields.choice(options, "arch", owhere, ARCHS)} if "arch" in options else {}
    return out, opts


def check_workload(workload: dict, options: dict, source: str) -> tuple[dict, dict]:
    """The plan file's ``workload`` and ``options``, each field checked; both as plain JSON-ready dicts.

    Examples
    --------
    >>> check_workload({"kind": "gemm", "m": 2, "n": 2, "k": 2}, {"schedule": "dot"}, "p.json")
    ({'kind': 'gemm', 'm': 2, 'n': 2, 'k': 2, 'dtype': 'f32'}, {'schedule': 'dot'})
    >>> check_workload({"kind": "conv"}, {}, "p.json")
    Traceback (most recent call last):
    ...
    engine.errors.PlanError: p.json: workload: field 'kind' must be one of gemm, mha, program, got 'conv'
    """
    where, owhere = f"{source}: workload", f"{source}: options"
    if not workload:
        return {}, _program_workload({"kind": "program"}, options, where, owhere)[1]
    kind = fields.choice(workload, "kind", where, ("gemm", "mha", "program"))
    if kind == "program":
        return _program_workload(workload, options, where, owhere)
    module, cls = _kinds()[kind]
    w = cls.from_dict(workload, where)
    return w.as_dict(), module.check_options(w, options, owhere)


def input_model(workload: dict, options: dict) -> InputModel:
    """The input model of a plan's workload and options (as a plan holds them): the workload module's
    own, or :data:`engine.inputs.GENERIC` for a program file and a plan without a workload.

    Examples
    --------
    >>> input_model({}, {}) is GENERIC
    True
    >>> [name for name, _, _ in input_model({"kind": "gemm", "m": 8, "n": 8, "k": 8}, {}).ranges]
    ['%ctaid.x', '%tid.x', 'batch', 'beta']
    """
    kind = _kinds().get(workload.get("kind"))
    if kind is None:
        return GENERIC
    module, cls = kind
    w, options = check_workload(workload, options, "plan")
    return module.input_model(cls.from_dict(w, "plan: workload"), options)

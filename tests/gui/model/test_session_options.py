"""The session's options are one typed value (engine.workloads.BuildOptions); a dict only in the session file."""

import json

import pytest

from engine.base.errors import RegtuneError
from engine.model.arch import DEFAULT_ARCH
from engine.workloads import BuildOptions
from gui.model.session import DEFAULT_OPTIONS, Session, load_session, save_session


def test_the_session_file_holds_the_options_as_before_and_reads_them_back_typed(tmp_path):
    options = DEFAULT_OPTIONS.with_(tile=(4, 4), strategies=("fp16-softmax",), arch="sm_90")
    path = save_session(Session(options=options), tmp_path / "s.json")
    written = json.loads(path.read_text())["options"]
    assert list(written) == ["arch", "budget", "headroom", "schedule", "tile", "strategies", "bc"]
    assert written == {"arch": "sm_90", "budget": 255, "headroom": 0.25, "schedule": "k-outer", "tile": [4, 4],
                       "strategies": ["fp16-softmax"], "bc": 16}
    back = load_session(path).options
    assert back == options and isinstance(back, BuildOptions) and back.tile == (4, 4)
    assert Session().to_dict()["options"] == {"arch": DEFAULT_ARCH, "budget": 255, "headroom": 0.25,
                                              "schedule": "k-outer", "tile": None, "strategies": [], "bc": 16}


@pytest.mark.parametrize("options, message", [
    ({"budget": 0}, "s.json: options: field 'budget' must be an integer in 1..255, got 0"),
    ({"tile": [4, 40]}, "s.json: options: field 'tile' must be null or [TM, TN] in 1..16, got [4, 40]"),
    ({"strategies": ["magic"]}, "s.json: options: field 'strategies' must list names from"),
    ({"speed": 1}, "s.json: options: unknown field 'speed'"),
])
def test_bad_session_options_are_refused_in_one_line(tmp_path, options, message):
    data = {**Session().to_dict(), "options": options}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RegtuneError) as err:
        load_session(path)
    assert message in str(err.value) and "\n" not in str(err.value)

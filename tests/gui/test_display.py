"""gui.qt.display: the checks that run before Qt starts, judged on environments passed as dicts."""

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from engine.base.errors import RegtuneError
from gui.qt import display
from gui.qt.display import (NO_DISPLAY, check_display, check_x_server, debian_packages, missing_libraries,
                         missing_libraries_message, x_server_listening)

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the checks run on Linux only")

LDD_XCB = """\
\tlinux-vdso.so.1 (0x00007fd088926000)
\tlibGL.so.1 => /lib/x86_64-linux-gnu/libGL.so.1 (0x00007fd088800000)
\tlibxcb-cursor.so.0 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxkbcommon-x11.so.0 => not found
\tlibxcb-icccm.so.4 => not found
\tlibqt-mystery.so.7 => not found
\t/lib64/ld-linux-x86-64.so.2 (0x00007fd088928000)
"""


def _one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def _free_display_number() -> int:
    """A display number with neither a socket file nor a listening abstract socket."""
    for number in range(987, 900, -1):
        if not os.path.exists(f"{display.X11_SOCKET_DIR}/X{number}") and not x_server_listening("", number):
            return number
    pytest.fail("no free X display number between 901 and 987")


@linux_only
def test_a_stale_display_is_named_in_one_line():
    number = _free_display_number()
    with pytest.raises(RegtuneError) as excinfo:
        check_display({"DISPLAY": f":{number}"})
    message = _one_line(excinfo)
    assert message.startswith(f"cannot reach the X display ':{number}' (DISPLAY): no X server is listening there")
    assert f"Xvfb :{number}" in message and "regtune screenshot" in message


def test_a_stale_tcp_display_names_the_port():
    with pytest.raises(RegtuneError) as excinfo:
        check_x_server("127.0.0.1:987.0")
    assert "nothing answers at 127.0.0.1 port 6987" in _one_line(excinfo)


def test_display_names_not_understood_are_left_to_qt():
    check_x_server("wayland-0")
    check_x_server("host/unix:0")


@linux_only
def test_a_listening_socket_file_and_an_abstract_socket_both_count(tmp_path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(tmp_path / "X5"))
        server.listen()
        assert x_server_listening("", 5, socket_dir=str(tmp_path))
        assert x_server_listening("unix", 5, socket_dir=str(tmp_path))
    assert not x_server_listening("", 6, socket_dir=str(tmp_path))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(f"\0{tmp_path}/X6")
        server.listen()
        assert x_server_listening("", 6, socket_dir=str(tmp_path))


def test_ldd_output_is_parsed_into_sorted_sonames_and_packages():
    missing = missing_libraries(LDD_XCB)
    assert missing == ["libqt-mystery.so.7", "libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxkbcommon-x11.so.0"]
    assert debian_packages(["libxcb-cursor.so.0"]) == (["libxcb-cursor0"], [])
    assert debian_packages(missing) == (["libxcb-cursor0", "libxcb-icccm4", "libxkbcommon-x11-0"],
                                        ["libqt-mystery.so.7"])
    assert missing_libraries("\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n") == []


def test_the_missing_library_message_names_sonames_and_packages():
    message = missing_libraries_message("xcb", missing_libraries(LDD_XCB))
    assert message == ("Qt's xcb platform plugin cannot load: missing libqt-mystery.so.7, libxcb-cursor.so.0, "
                       "libxcb-icccm.so.4, libxkbcommon-x11.so.0; install the Debian/Ubuntu packages: "
                       "apt-get install libxcb-cursor0 libxcb-icccm4 libxkbcommon-x11-0; "
                       "no Debian/Ubuntu package known for libqt-mystery.so.7")


@linux_only
def test_missing_plugin_libraries_raise_one_line(monkeypatch):
    monkeypatch.setattr(display, "_ldd", lambda path: LDD_XCB)
    with pytest.raises(RegtuneError) as excinfo:
        check_display({"QT_QPA_PLATFORM": "offscreen"})
    assert _one_line(excinfo).startswith("Qt's offscreen platform plugin cannot load: missing libqt-mystery.so.7")


def test_a_missing_ldd_skips_the_library_check(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert display._ldd(tmp_path / "libqxcb.so") is None


def test_the_plugin_files_are_found_without_importing_qt():
    code = ("import sys; from gui.qt.display import plugin_files; "
            "print(len(plugin_files('xcb') + plugin_files('offscreen')), 'PySide6' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["3", "False"]


@linux_only
def test_offscreen_passes_on_this_machine():
    check_display({"QT_QPA_PLATFORM": "offscreen"})


def test_wayland_and_other_platforms_are_left_to_qt():
    check_display({"WAYLAND_DISPLAY": "wayland-0"})
    check_display({"QT_QPA_PLATFORM": "wayland", "DISPLAY": ":987"})
    check_display({"QT_QPA_PLATFORM": "minimal"})


@linux_only
@pytest.mark.parametrize("environ", [{}, {"QT_QPA_PLATFORM": "xcb"}], ids=["nothing", "xcb-without-DISPLAY"])
def test_without_a_display_the_old_message_stands(environ):
    with pytest.raises(RegtuneError) as excinfo:
        check_display(environ)
    assert _one_line(excinfo) == NO_DISPLAY
    assert NO_DISPLAY.startswith("no display to open the window on (DISPLAY is not set)")


@linux_only
def test_a_listening_display_goes_on_to_the_library_check():
    """With something listening on the display, either all passes or the message names packages."""
    number = _free_display_number()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(f"\0{display.X11_SOCKET_DIR}/X{number}")
        server.listen()
        try:
            check_display({"DISPLAY": f":{number}"})
        except RegtuneError as exc:
            assert str(exc).startswith("Qt's xcb platform plugin cannot load: missing ")
            assert "apt-get install " in str(exc) and "\n" not in str(exc)


@pytest.fixture
def xvfb():
    """A real X server on display :57, stopped after the test."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb); the real-display test needs it")
    if x_server_listening("", 57):
        pytest.skip("display :57 is already taken")
    process = subprocess.Popen(["Xvfb", ":57", "-nolisten", "tcp"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not x_server_listening("", 57) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        yield ":57"
    finally:
        process.kill()
        process.wait(timeout=10)


@linux_only
def test_a_real_xvfb_display_is_reachable(xvfb):
    assert x_server_listening("", 57)
    check_x_server(xvfb)

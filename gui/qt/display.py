"""Can Qt open a window here? Answered before Qt starts, without Qt.

Invariant: this module never imports PySide6 and never creates a
QApplication. It reads the environment, knocks on the X server's socket and
runs ``ldd`` on Qt's platform plugin, and reports the first thing missing
as one RegtuneError line that names the display or the Debian/Ubuntu
packages to install, so Qt never gets the chance to abort the process.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from engine.base.errors import RegtuneError

X11_SOCKET_DIR = "/tmp/.X11-unix"
X_TCP_PORT = 6000
CONNECT_TIMEOUT_S = 0.5
LDD_TIMEOUT_S = 10

NO_DISPLAY = ("no display to open the window on (DISPLAY is not set); the headless commands "
              "work without one, and 'regtune screenshot' renders the window offscreen")

# Each platform plugin and the Qt library that carries most of its links, relative to PySide6/Qt.
PLUGIN_LIBRARIES = {
    "xcb": ("plugins/platforms/libqxcb.so", "lib/libQt6XcbQpa.so.6"),
    "offscreen": ("plugins/platforms/libqoffscreen.so",),
}

DEBIAN_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
}

_DISPLAY = re.compile(r"(?P<host>[^/]*):(?P<number>\d+)(?:\.\d+)?")


def check_display(environ=None) -> None:
    """Raise RegtuneError, in one line, when Qt could not open its platform here.

    On Linux: no display at all, an X display nobody listens on, or a platform
    plugin (xcb, offscreen) whose shared libraries do not load. Wayland and
    other platforms are left to Qt; other operating systems are not checked.

    Parameters
    ----------
    environ : mapping, optional
        The environment to judge (``os.environ`` when None).

    Examples
    --------
    >>> check_display({"QT_QPA_PLATFORM": "wayland"}) is None
    True
    """
    if not sys.platform.startswith("linux"):
        return
    environ = os.environ if environ is None else environ
    platform = platform_name(environ)
    if platform is None or (platform == "xcb" and not environ.get("DISPLAY")):
        raise RegtuneError(NO_DISPLAY)
    if platform == "xcb":
        check_x_server(environ["DISPLAY"])
    if platform in PLUGIN_LIBRARIES:
        check_plugin_libraries(platform)


def platform_name(environ) -> str | None:
    """The Qt platform plugin that would start: 'xcb', 'offscreen', another name, or None for none.

    Examples
    --------
    >>> platform_name({"DISPLAY": ":0"}), platform_name({"QT_QPA_PLATFORM": "xcb:nograb", "DISPLAY": ":0"})
    ('xcb', 'xcb')
    >>> platform_name({"WAYLAND_DISPLAY": "wayland-0"}), platform_name({}) is None
    ('wayland', True)
    """
    requested = environ.get("QT_QPA_PLATFORM", "")
    for name in ("xcb", "offscreen"):
        if requested.startswith(name):
            return name
    if requested:
        return requested
    if environ.get("DISPLAY"):
        return "xcb"
    return "wayland" if environ.get("WAYLAND_DISPLAY") else None


def parse_display(display: str) -> tuple[str, int] | None:
    """``(host, display number)`` of an X display name, or None for a form not understood here.

    Examples
    --------
    >>> parse_display(":99"), parse_display(":0.1"), parse_display("unix:3")
    (('', 99), ('', 0), ('unix', 3))
    >>> parse_display("localhost:10.0"), parse_display("wayland-0") is None
    (('localhost', 10), True)
    """
    match = _DISPLAY.fullmatch(display)
    return None if match is None else (match["host"], int(match["number"]))


def x_server_listening(host: str, number: int, socket_dir: str = X11_SOCKET_DIR) -> bool:
    """Whether an X server accepts connections for display ``host:number``.

    A local display (host '' or 'unix') is tried at its socket file and at
    the abstract socket of the same name; any other host at TCP port 6000+N.

    Examples
    --------
    >>> x_server_listening("", 987, socket_dir="/nonexistent/.X11-unix")
    False
    """
    if host in ("", "unix"):
        path = f"{socket_dir}/X{number}"
        return _unix_connects(path) or _unix_connects("\0" + path)
    return _tcp_connects(host, X_TCP_PORT + number)


def check_x_server(display: str) -> None:
    """Raise RegtuneError when nothing listens at ``display``; names Qt does not parse pass through."""
    parsed = parse_display(display)
    if parsed is not None and not x_server_listening(*parsed):
        raise RegtuneError(unreachable_message(display, *parsed))


def unreachable_message(display: str, host: str, number: int) -> str:
    """The one-line error for an X display nobody listens on.

    Examples
    --------
    >>> unreachable_message(":99", "", 99)  # doctest: +NORMALIZE_WHITESPACE
    "cannot reach the X display ':99' (DISPLAY): no X server is listening there; start one
    (e.g. Xvfb :99) or unset DISPLAY; 'regtune screenshot' renders offscreen without one"
    """
    if host in ("", "unix"):
        why, hint = "no X server is listening there", f"start one (e.g. Xvfb :{number}) or unset DISPLAY"
    else:
        why = f"nothing answers at {host} port {X_TCP_PORT + number}"
        hint = "check the X server or the SSH X forwarding, or unset DISPLAY"
    return (f"cannot reach the X display {display!r} (DISPLAY): {why}; {hint}; "
            "'regtune screenshot' renders offscreen without one")


def _unix_connects(address: str) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT_S)
            sock.connect(address)
    except OSError:
        return False
    return True


def _tcp_connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError:
        return False
    return True


def check_plugin_libraries(platform: str) -> None:
    """Raise RegtuneError when ``ldd`` finds libraries of the platform plugin missing.

    Skipped (no error) when PySide6, its plugin or ``ldd`` cannot be found.
    """
    outputs = [_ldd(path) for path in plugin_files(platform)]
    missing = missing_libraries("".join(output for output in outputs if output))
    if missing:
        raise RegtuneError(missing_libraries_message(platform, missing))


def plugin_files(platform: str) -> list[Path]:
    """The installed files of a platform plugin and its Qt support library, located without importing Qt."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return []
    qt_dir = Path(next(iter(spec.submodule_search_locations))) / "Qt"
    return [qt_dir / name for name in PLUGIN_LIBRARIES[platform] if (qt_dir / name).is_file()]


def _ldd(path: Path) -> str | None:
    """``ldd``'s report on ``path``, or None when ldd is missing or hangs (its exit status says nothing useful)."""
    try:
        done = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=LDD_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout


def missing_libraries(ldd_output: str) -> list[str]:
    """The sonames ``ldd`` reports as not found, sorted, each once.

    Examples
    --------
    >>> missing_libraries("\\tlibxcb-cursor.so.0 => not found\\n"
    ...                   "\\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f00)\\n"
    ...                   "\\tlibxcb-cursor.so.0 => not found\\n\\tlibxcb-icccm.so.4 => not found\\n")
    ['libxcb-cursor.so.0', 'libxcb-icccm.so.4']
    """
    return sorted({line.split("=>")[0].strip() for line in ldd_output.splitlines()
                   if line.rstrip().endswith("=> not found")})


def debian_packages(sonames) -> tuple[list[str], list[str]]:
    """The Debian/Ubuntu packages that provide ``sonames`` and the sonames no package is known for.

    Examples
    --------
    >>> debian_packages(["libxcb-cursor.so.0", "libgthread-2.0.so.0", "libglib-2.0.so.0", "libfoo.so.1"])
    (['libglib2.0-0', 'libxcb-cursor0'], ['libfoo.so.1'])
    """
    packages = sorted({DEBIAN_PACKAGES[name] for name in sonames if name in DEBIAN_PACKAGES})
    return packages, sorted(name for name in sonames if name not in DEBIAN_PACKAGES)


def missing_libraries_message(platform: str, missing) -> str:
    """The one-line error for a platform plugin whose libraries are missing.

    Examples
    --------
    >>> missing_libraries_message("xcb", ["libxcb-cursor.so.0", "libxcb-icccm.so.4"])  # doctest: +NORMALIZE_WHITESPACE
    "Qt's xcb platform plugin cannot load: missing libxcb-cursor.so.0, libxcb-icccm.so.4;
    install the Debian/Ubuntu packages: apt-get install libxcb-cursor0 libxcb-icccm4"
    """
    packages, unknown = debian_packages(missing)
    advice = [f"install the Debian/Ubuntu packages: apt-get install {' '.join(packages)}"] if packages else []
    advice += [f"no Debian/Ubuntu package known for {', '.join(unknown)}"] if unknown else []
    return f"Qt's {platform} platform plugin cannot load: missing {', '.join(missing)}; {'; '.join(advice)}"

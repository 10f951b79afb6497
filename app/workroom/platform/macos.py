"""The few Cocoa calls a menu-bar app needs, through the Objective-C runtime with ctypes (no PyObjC).

- hide_dock_icon: NSApp.setActivationPolicy(Accessory), as LSUIElement does for the packaged app.
- bring_to_front: NSApp.activateIgnoringOtherApps(YES). A menu-bar-only app is never the active app, so a
  window or dialog it opens would appear behind the frontmost app's windows without this.
- AppNapGuard: NSProcessInfo.beginActivityWithOptions:reason: while a keep-awake poll or a prompt deadline is
  pending, so App Nap does not throttle the timers that keep a box awake or expire a prompt; the activity is
  ended when nothing is pending.

Everything is a no-op off macOS. The runtime is reached through one seam (`ObjcBridge`), so the code paths
are unit-tested on Linux with the bridge faked; only a Mac can show the calls take effect (docs/macos.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
from collections.abc import Callable
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

ACTIVATION_POLICY_ACCESSORY = 1
# NSActivityUserInitiatedAllowingIdleSystemSleep: timers run at full rate, but the Mac itself may still sleep
# (keeping a remote box awake must not keep this laptop awake).
ACTIVITY_OPTIONS = 0x00FFFFFF & ~(1 << 20)


class ObjcBridge(Protocol):
    def msg(self, receiver: int, selector: str, *args: object) -> int: ...
    def cls(self, name: str) -> int: ...
    def string(self, text: str) -> int: ...


class CtypesBridge:
    """objc_msgSend through ctypes. Argument types are set per call, as objc_msgSend is variadic in spirit."""

    def __init__(self) -> None:
        self.objc = ctypes.cdll.LoadLibrary(ctypes.util.find_library("objc") or "libobjc.dylib")
        ctypes.cdll.LoadLibrary("/System/Library/Frameworks/AppKit.framework/AppKit")
        self.objc.objc_getClass.restype = ctypes.c_void_p
        self.objc.objc_getClass.argtypes = [ctypes.c_char_p]
        self.objc.sel_registerName.restype = ctypes.c_void_p
        self.objc.sel_registerName.argtypes = [ctypes.c_char_p]

    def cls(self, name: str) -> int:
        return int(self.objc.objc_getClass(name.encode()) or 0)

    def msg(self, receiver: int, selector: str, *args: object) -> int:
        send = self.objc.objc_msgSend
        send.restype = ctypes.c_void_p
        types: list[type] = [ctypes.c_void_p, ctypes.c_void_p]
        for arg in args:
            types.append(ctypes.c_ulonglong if isinstance(arg, int) and not isinstance(arg, bool) else ctypes.c_void_p)
        send.argtypes = types
        sel = self.objc.sel_registerName(selector.encode())
        return int(send(ctypes.c_void_p(receiver), ctypes.c_void_p(sel), *args) or 0)

    def string(self, text: str) -> int:
        ns_string = self.cls("NSString")
        self.objc.objc_msgSend.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
        self.objc.objc_msgSend.restype = ctypes.c_void_p
        sel = self.objc.sel_registerName(b"stringWithUTF8String:")
        return int(self.objc.objc_msgSend(ctypes.c_void_p(ns_string), ctypes.c_void_p(sel), text.encode()) or 0)


_bridge: ObjcBridge | None = None


def _load_on_mac(factory: Callable[[], T], what: str) -> T | None:
    """`factory()` on macOS, None elsewhere or when the framework cannot be loaded (logged as `what`)."""
    if sys.platform != "darwin":
        return None
    try:
        return factory()
    except (OSError, AttributeError) as exc:
        log.warning("%s unavailable: %s", what, exc)
        return None


def bridge() -> ObjcBridge | None:
    """The Objective-C runtime on macOS (made once), None elsewhere or when it cannot be loaded."""
    global _bridge
    if _bridge is None:
        _bridge = _load_on_mac(CtypesBridge, "Cocoa bridge")
    return _bridge


def _ns_app(b: ObjcBridge) -> int:
    return b.msg(b.cls("NSApplication"), "sharedApplication")


def hide_dock_icon() -> None:
    b = bridge()
    if b is not None:
        b.msg(_ns_app(b), "setActivationPolicy:", ACTIVATION_POLICY_ACCESSORY)


def bring_to_front() -> None:
    """Make the app active so the window or dialog about to show is in front (a no-op off macOS)."""
    b = bridge()
    if b is not None:
        b.msg(_ns_app(b), "activateIgnoringOtherApps:", 1)


class AppNapGuard:
    """Holds one NSProcessInfo activity while anything is pending; `hold(key)` / `release(key)` by reason."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.token: int | None = None

    def hold(self, key: str) -> None:
        self.pending.add(key)
        self._sync()

    def release(self, key: str) -> None:
        self.pending.discard(key)
        self._sync()

    def _sync(self) -> None:
        b = bridge()
        if b is None:
            return
        info = b.msg(b.cls("NSProcessInfo"), "processInfo")
        if self.pending and self.token is None:
            reason = b.string("Workroom keeps remote boxes awake and times prompts")
            token = b.msg(info, "beginActivityWithOptions:reason:", ACTIVITY_OPTIONS, reason)
            self.token = b.msg(token, "retain") if token else None
        elif not self.pending and self.token is not None:
            b.msg(info, "endActivity:", self.token)
            b.msg(self.token, "release")
            self.token = None


# -- this Mac's idle sleep ------------------------------------------------------------------------------------
# A request-metered box is kept awake by this Mac's polls: if this Mac idle-sleeps, they stop and the box may be
# suspended mid-job. An IOKit power assertion (PreventUserIdleSystemSleep) holds off idle sleep only; closing the
# lid still sleeps the Mac (no assertion a user app may take prevents that, nor should it).
IDLE_SLEEP_ASSERTION = "PreventUserIdleSystemSleep"
ASSERTION_REASON = "Workroom keeps a busy remote box awake"
_CF_UTF8 = 0x08000100
_ASSERTION_LEVEL_ON = 255


class PowerBridge(Protocol):
    def create_assertion(self, kind: str, reason: str) -> int | None: ...
    def release_assertion(self, assertion_id: int) -> None: ...


class IOKitPower:
    """IOPMAssertionCreateWithName / IOPMAssertionRelease through ctypes (C functions, not Objective-C)."""

    def __init__(self) -> None:
        self.iokit = ctypes.cdll.LoadLibrary("/System/Library/Frameworks/IOKit.framework/IOKit")
        self.cf = ctypes.cdll.LoadLibrary("/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation")
        self.cf.CFStringCreateWithCString.restype = ctypes.c_void_p
        self.cf.CFStringCreateWithCString.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32]
        self.cf.CFRelease.argtypes = [ctypes.c_void_p]
        self.iokit.IOPMAssertionCreateWithName.restype = ctypes.c_int32
        self.iokit.IOPMAssertionCreateWithName.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                                           ctypes.POINTER(ctypes.c_uint32)]
        self.iokit.IOPMAssertionRelease.restype = ctypes.c_int32
        self.iokit.IOPMAssertionRelease.argtypes = [ctypes.c_uint32]

    def create_assertion(self, kind: str, reason: str) -> int | None:
        cf_kind = self.cf.CFStringCreateWithCString(None, kind.encode(), _CF_UTF8)
        cf_reason = self.cf.CFStringCreateWithCString(None, reason.encode(), _CF_UTF8)
        try:
            out = ctypes.c_uint32(0)
            result = self.iokit.IOPMAssertionCreateWithName(cf_kind, _ASSERTION_LEVEL_ON, cf_reason, ctypes.byref(out))
            return int(out.value) if result == 0 else None
        finally:
            for ref in (cf_kind, cf_reason):
                if ref:
                    self.cf.CFRelease(ref)

    def release_assertion(self, assertion_id: int) -> None:
        self.iokit.IOPMAssertionRelease(assertion_id)


_power: PowerBridge | None = None


def power() -> PowerBridge | None:
    """IOKit's power assertions on macOS (made once), None elsewhere or when they cannot be loaded."""
    global _power
    if _power is None:
        _power = _load_on_mac(IOKitPower, "IOKit power assertions")
    return _power


class IdleSleepGuard:
    """Holds one PreventUserIdleSystemSleep assertion while any host needs this Mac awake (`hold(key)` /
    `release(key)`), only while `enabled` (the user's setting); a no-op off macOS."""

    def __init__(self) -> None:
        self.enabled = False
        self.pending: set[str] = set()
        self.assertion: int | None = None

    def set_enabled(self, enabled: bool) -> None:
        self.enabled = enabled
        self._sync()

    def hold(self, key: str) -> None:
        self.pending.add(key)
        self._sync()

    def release(self, key: str) -> None:
        self.pending.discard(key)
        self._sync()

    @property
    def holding(self) -> bool:
        return self.assertion is not None

    def _sync(self) -> None:
        p = power()
        if p is None:
            return
        want = self.enabled and bool(self.pending)
        if want and self.assertion is None:
            self.assertion = p.create_assertion(IDLE_SLEEP_ASSERTION, ASSERTION_REASON)
            if self.assertion is None:
                log.warning("this Mac's idle sleep could not be held off (IOPMAssertionCreateWithName failed)")
        elif not want and self.assertion is not None:
            p.release_assertion(self.assertion)
            self.assertion = None

"""The few Cocoa calls a menu-bar app needs, through the Objective-C runtime with rubicon-objc (no PyObjC).

- hide_dock_icon: NSApp.setActivationPolicy(Accessory), as LSUIElement does for the packaged app.
- bring_to_front: NSApp.activateIgnoringOtherApps(YES). A menu-bar-only app is never the active app, so a
  window or dialog it opens would appear behind the frontmost app's windows without this.
- AppNapGuard: NSProcessInfo.beginActivityWithOptions:reason: while a keep-awake poll or a prompt deadline is
  pending, so App Nap does not throttle the timers that keep a box awake or expire a prompt; the activity is
  ended when nothing is pending.

Everything is a no-op off macOS. The runtime is reached through one seam (`ObjcBridge`), so the code paths
are unit-tested on Linux with the bridge faked; only a Mac can show the calls take effect (docs/macos.md).
Every message the app sends is declared in `SIGNATURES` with its C prototype: objc_msgSend must be called as the
method's own function type (on arm64 a guessed one puts arguments in the wrong registers), and the fakes refuse
a message that is not declared there.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

ACTIVATION_POLICY_ACCESSORY = 1
# NSActivityUserInitiatedAllowingIdleSystemSleep: timers run at full rate, but the Mac itself may still sleep
# (keeping a remote box awake must not keep this laptop awake).
ACTIVITY_OPTIONS = 0x00FFFFFF & ~(1 << 20)


# The C types of the messages below, by their Objective-C names.
ID, CLASS, SEL, BOOL, NSINTEGER, UINT64, CSTRING = "id", "Class", "SEL", "BOOL", "NSInteger", "uint64_t", "char *"
C_TYPES = (ID, CLASS, SEL, BOOL, NSINTEGER, UINT64, CSTRING)  # what RubiconBridge maps to ctypes

# Every message the app (and the seam's own test on a Mac) sends: selector -> (return type or None for void,
# argument types), as Apple's headers declare them.
SIGNATURES: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "sharedApplication": (ID, ()),  # +[NSApplication sharedApplication]
    "setActivationPolicy:": (BOOL, (NSINTEGER,)),  # NSApplicationActivationPolicy is an NSInteger
    "activationPolicy": (NSINTEGER, ()),
    "activateIgnoringOtherApps:": (None, (BOOL,)),
    "isActive": (BOOL, ()),
    "processInfo": (ID, ()),  # +[NSProcessInfo processInfo]
    "beginActivityWithOptions:reason:": (ID, (UINT64, ID)),  # NSActivityOptions is a uint64_t
    "endActivity:": (None, (ID,)),
    "retain": (ID, ()),
    "release": (None, ()),
    "stringWithUTF8String:": (ID, (CSTRING,)),  # +[NSString stringWithUTF8String:]
    "mainAppService": (ID, ()),  # +[SMAppService mainAppService]
    "status": (NSINTEGER, ()),  # SMAppServiceStatus is an NSInteger
    "registerAndReturnError:": (BOOL, (ID,)),  # NSError ** (the app passes NULL)
    "unregisterAndReturnError:": (BOOL, (ID,)),
    "respondsToSelector:": (BOOL, (SEL,)),
    "isKindOfClass:": (BOOL, (CLASS,)),
}


def signature(selector: str, args: tuple[object, ...]) -> tuple[str | None, tuple[str, ...]]:
    """The declared prototype of `selector`; a message not declared, or with the wrong number of arguments, is a
    bug that would crash the app on a Mac: refused here, on every platform."""
    sig = SIGNATURES.get(selector)
    if sig is None:
        raise KeyError(f"the Objective-C message {selector!r} has no declared signature (macos.SIGNATURES)")
    if len(sig[1]) != len(args):
        raise TypeError(f"{selector} takes {len(sig[1])} argument(s), {len(args)} given")
    return sig


class ObjcBridge(Protocol):
    """Objects are opaque handles: a real bridge's are the runtime's pointers, a fake's whatever it likes."""

    def msg(self, receiver: Any, selector: str, *args: object) -> Any: ...
    def cls(self, name: str) -> Any: ...
    def string(self, text: str) -> Any: ...


class RubiconBridge:
    """Messages through rubicon-objc's `send_message`, each with its declared prototype: rubicon builds (and
    caches) one function type per prototype, so nothing shared is changed per call, and takes care of the
    platform's calling convention. Classes come from the runtime by name; AppKit is loaded first."""

    def __init__(self) -> None:
        from rubicon.objc import runtime  # loads libobjc and Foundation

        runtime.load_library("AppKit")
        self._rt = runtime
        self._types: dict[str, Any] = {ID: runtime.objc_id, CLASS: runtime.Class, SEL: runtime.SEL,
                                       BOOL: ctypes.c_bool, NSINTEGER: ctypes.c_long, UINT64: ctypes.c_uint64,
                                       CSTRING: ctypes.c_char_p}

    def cls(self, name: str) -> Any:
        return self._rt.get_class(name)

    def msg(self, receiver: Any, selector: str, *args: object) -> Any:
        restype, argtypes = signature(selector, args)
        return self._rt.send_message(receiver, selector, *args,
                                     restype=None if restype is None else self._types[restype],
                                     argtypes=[self._types[t] for t in argtypes])

    def string(self, text: str) -> Any:
        return self.msg(self.cls("NSString"), "stringWithUTF8String:", text.encode())


_bridge: ObjcBridge | None = None


def _load_on_mac(factory: Callable[[], T], what: str) -> T | None:
    """`factory()` on macOS, None elsewhere or when the framework cannot be loaded (logged as `what`)."""
    if sys.platform != "darwin":
        return None
    try:
        return factory()
    except (OSError, AttributeError, ImportError, ValueError) as exc:  # rubicon: ValueError for a missing library
        log.warning("%s unavailable: %s", what, exc)
        return None


def bridge() -> ObjcBridge | None:
    """The Objective-C runtime on macOS (made once), None elsewhere or when it cannot be loaded."""
    global _bridge
    if _bridge is None:
        _bridge = _load_on_mac(RubiconBridge, "Cocoa bridge")
    return _bridge


def _ns_app(b: ObjcBridge) -> Any:
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


class _HeldWhilePending:
    """Something held while any reason is pending: `hold(key)` / `release(key)`, then `_sync` holds or lets go."""

    def __init__(self) -> None:
        self.pending: set[str] = set()

    def hold(self, key: str) -> None:
        self.pending.add(key)
        self._sync()

    def release(self, key: str) -> None:
        self.pending.discard(key)
        self._sync()

    def _sync(self) -> None:
        raise NotImplementedError


class AppNapGuard(_HeldWhilePending):
    """Holds one NSProcessInfo activity while anything is pending."""

    def __init__(self) -> None:
        super().__init__()
        self.token: Any = None

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


class IdleSleepGuard(_HeldWhilePending):
    """Holds one PreventUserIdleSystemSleep assertion while any host needs this Mac awake (`hold(key)` /
    `release(key)`), only while `enabled` (the user's setting); a no-op off macOS."""

    def __init__(self) -> None:
        super().__init__()
        self.enabled = False
        self.assertion: int | None = None

    def set_enabled(self, enabled: bool) -> None:
        self.enabled = enabled
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

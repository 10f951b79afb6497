"""The agent's state and its tick: sampler -> classifier -> ceiling -> published verdict -> heartbeat.

The tick runs on its own thread; the socket server reads status from another thread under `lock`, and
computes `stalled` itself so a stuck tick is visible.
"""

import os
import threading
import time

from wr_agent import PROTOCOL, VERSION, clocks, job_wait, own_flows, runtime
from wr_agent import reasons as reasons_mod
from wr_agent import settings as settings_mod
from wr_agent.agent_log import log
from wr_agent.busy_span import BusySpan
from wr_agent.ceiling import Ceiling
from wr_agent.classifier import TIMER_MIN_SLEEP, Classifier
from wr_agent.timeline import Timeline, key_for
from wr_agent.user_exclusions import UserExclusions

STALL_SECONDS = 30.0
# A fresh agent is still checking until it has looked at the box's processes and had the time to judge what it
# found at its first look: the first listing, then a block it found as long as job_wait's WAIT_MIN (2 s) and a
# timer sleep as long as TIMER_MIN_SLEEP (3 s), and a tick's slack. Its status says until when
# (`checking_until`, on its own clock, the same in every status: so the end of checking pushes nothing, which on a
# network-metered box would be our own bytes moving its idle clock); the app shows "Checking…", never "Idle",
# until then. (What an agent before it knew of waiting jobs counts from its first tick: recall_jobs.)
CHECKING_SECONDS = max(job_wait.WAIT_MIN, TIMER_MIN_SLEEP) + 2.0
TRIM_AFTER_TICKS = 3  # ticks after which the start-up's freed memory is given back (runtime.release_freed_memory)
JOBS_EVERY = 5.0  # seconds between looks at whether what the sampler knows of waiting jobs changed (then kept)
# Fields whose change alone does not make a status event (they move on every tick).
QUIET_FIELDS = ("monotonic", "awake_seconds", "busy_seconds", "hold_until")


def visible(status):
    """The part of a status a user would see change; events are pushed when it differs."""
    v = dict((k, val) for k, val in status.items() if k not in QUIET_FIELDS)
    if v.get("verdict") == "IDLE":
        # Published IDLE (idle, or suppressed after an unanswered prompt): what the classifier sees next
        # is not shown as work, and pushing its churn would put bytes on the wire of a box that should
        # be falling asleep.
        v.pop("busy_reasons", None)
        v.pop("structured_reasons", None)
        v.pop("classifier_verdict", None)
    ka = dict(v["keep_awake"])
    ka.pop("last_sent", None)
    ka.pop("sent", None)
    v["keep_awake"] = ka
    return v


# What one protocol line costs on the box's link when it travels over SSH: the SSH packet (length, padding,
# MAC, channel header), the TCP/IP segment carrying it and the ACK coming back. Measured on loopback with
# OpenSSH and paramiko: a 40-byte ping and its reply moved ~400 bytes; generous on purpose.
WIRE_FACTOR = 1.1
WIRE_OVERHEAD_PER_MESSAGE = 250


class Agent(object):
    NOT_HANDED_OFF = (
        "lock", "_stop", "_thread", "on_tick",  # this process's own machinery
        "sampler", "heartbeat", "clock", "suspend_clock",  # made again by the new process
        "workroom", "build", "tick_seconds", "settings_path", "min_duration", "test_min_duration",
        "health_listen",  # the new process's command line and bundle
        "saved_settings", "settings_error",  # the new process reads the settings file itself
        "timeline", "user_exclusions",  # kept in files of their own, which the new process reads
        "last_tick", "started", "ticks", "tick_error",  # the new process's own ticks (stalled counts from its start)
        "own_wire_bytes", "_forget_processes",  # about the next tick, which the new process's sampler starts afresh
        "ceiling_memory", "_remembered_ceiling",  # the kept copy of the ceiling (carried as the ceiling itself)
        "jobs_memory", "_remembered_jobs",  # the sampler's knowledge of waiting jobs, kept in its own file
    )
    """Attributes a hand-off does not carry: `handoff_state` carries the rest (the ceiling, classifier and busy
    span by their own `to_state`, each with its own list). tests/unit/agent/test_agent_handoff_state.py fails
    on an attribute neither carried nor named here, so state added later is not lost at every app update."""

    def __init__(self, sampler, settings, heartbeat, workroom, build, hold_seconds=30.0, tick_seconds=1.0,
                 settings_path=None, settings_error=None, min_duration=settings_mod.MIN_DURATION,
                 test_min_duration=None, clock=time.monotonic, saved_settings=None, health_listen=None,
                 suspend_clock=clocks.suspend_aware):
        self.lock = threading.RLock()
        self.sampler = sampler
        self.suspend_clock = suspend_clock  # tick gaps (the box slept) are measured on it
        self.classifier = Classifier(hold_seconds, tick_seconds, gap_clock=suspend_clock)
        self.ceiling = Ceiling(settings)
        self.heartbeat = heartbeat
        self.workroom = workroom
        self.build = build
        self.tick_seconds = tick_seconds
        self.settings_path = settings_path
        self.settings_error = settings_error
        self.min_duration = min_duration
        self.test_min_duration = test_min_duration
        self.clock = clock
        self.span = BusySpan(tick_seconds)
        self.classifier_busy = False
        self.published_busy = False
        self.last_tick = None
        self.started = clock()
        self.saved_settings = saved_settings  # what the settings file holds, when it is valid
        self.ticks = 0
        self.tick_error = None
        self.on_tick = None  # callable the server sets to be woken after each tick
        self.health_listen = health_listen  # "host:port" the health endpoint is bound to, shown in status
        self._stop = threading.Event()
        self._thread = None
        # Bytes our own relay clients (the app, over SSH) put on the wire since the last tick, estimated by
        # the server; the net signal discounts them so the app's own traffic never makes the box look busy.
        self.own_wire_bytes = 0
        # The why-awake record and the user's "never work" names, in files beside the settings.
        base = os.path.splitext(settings_path)[0] if settings_path else None
        self.timeline = Timeline(base and base + ".timeline")
        self.user_exclusions = UserExclusions(base and base + ".exclusions")
        self._forget_processes = False
        # The ceiling's state, kept as it changes: a replacement for a frozen or crashed agent (killed, not
        # handed off) goes on from it, so an unanswered prompt's deadline is not reset by the app's repair.
        self.ceiling_memory = base and base + ".ceiling"
        self._remembered_ceiling = None
        # What the sampler knows of waiting jobs (a sleep's start, whether it was seen to wake), kept as it changes
        # and read by any agent that starts after this one, replacement or hand-off alike.
        self.jobs_memory = base and base + ".jobs"
        self._remembered_jobs = (None, None)  # (when last looked at, what was written)

    def exclude_client(self, pid):
        """The app connected directly (this computer): its process tree is not work (docs/agent.md)."""
        add = getattr(self.sampler, "exclude", None)
        if pid and add is not None:
            add(pid)

    def claim_flow(self, peer_pid, peer_comm):
        """The app subscribed through `peer_pid`: its SSH connection is ours from its first byte (own_flows)."""
        flows = getattr(self.sampler, "own_flows", None)
        if flows is None or not peer_pid:
            return
        if peer_comm in ("sshd", "sshd-session"):
            flows.claim_recent()  # a stream straight to this socket: sshd's process is not ours to read
            return
        key = own_flows.ssh_connection_of(peer_pid)
        if key is not None:
            flows.claim(key)

    def count_own_traffic(self, payload_bytes, messages):
        """The health endpoint tells us what it exchanged with its pollers (not SSH: no flow of ours covers it)."""
        with self.lock:
            self.own_wire_bytes += int(payload_bytes * WIRE_FACTOR) + messages * WIRE_OVERHEAD_PER_MESSAGE

    def count_relay_traffic(self, payload_bytes, messages):
        """The server tells us what it exchanged with relay clients (see Server._own): an estimate, used only
        where the app's SSH connections cannot be accounted by connection (no sock_diag: own_flows)."""
        if getattr(self.sampler, "own_flows", None) is None:
            self.count_own_traffic(payload_bytes, messages)

    # -- tick ------------------------------------------------------------------------------------------------
    def tick(self):
        with self.lock:
            hint = self.classifier.operations > 0
        if self._forget_processes:  # the exclusions changed: let the sampler look at every process afresh
            self._forget_processes = False
            self.sampler.close()
        sig = self.sampler.sample(busy_hint=hint)
        flows = getattr(self.sampler, "own_flows", None)
        held, released = flows.account(sig.net_bytes) if flows is not None else (0, 0)
        now = self.clock()
        with self.lock:
            own, self.own_wire_bytes = self.own_wire_bytes, 0
            # Our SSH connections by their own counters (own_flows; the relay's bytes are inside them), and what the
            # health endpoint exchanged with its pollers.
            sig.net_bytes = max(0, sig.net_bytes - held - own) + released
            busy, _ = self.classifier.step(now, sig)
            self.classifier_busy = busy
            published_before = self.published_busy
            gap = self.classifier.last_gap
            woke = gap is not None and gap[0] == now  # the box slept just before this tick: a new span
            self.published_busy = published = self.ceiling.update(now, busy, woke)
            self.last_tick = now
            self.ticks += 1
            c = self.ceiling
            # Plain text before it is kept: any user names processes, and the record is shown in terminals.
            reasons = [reasons_mod.clean(r) for r in self.classifier.reasons]
            key = key_for(self.published_busy, busy, c.exceeded, c.suppressed, reasons[:1])
            self.span.step(now, busy, published_before, reasons, woke)
        # Outside the lock: a heartbeat to a named target resolves it, and a dead DNS server must not stall
        # every client and the health endpoint for as long as the lookup takes (only this thread sends).
        self.heartbeat.tick(now, published)
        self.timeline.note(key)
        self._remember_ceiling()
        self._remember_jobs(now)

    def _remember_ceiling(self):
        """Write the ceiling's state when it changed (a crossing, an answer, busy starting or ending: rare)."""
        with self.lock:
            state = self.ceiling.to_state()
        if self.ceiling_memory is None or state == self._remembered_ceiling:
            return
        try:
            runtime.remember_ceiling(self.ceiling_memory, state)
            self._remembered_ceiling = state
        except OSError as exc:  # a full disk costs the memory, never the tick
            log.warning("cannot keep the ceiling state: %s", exc)

    def _remember_jobs(self, now):
        """Write the sampler's knowledge of waiting jobs when it changed, looked at every JOBS_EVERY seconds."""
        knowledge = getattr(self.sampler, "knowledge", None)
        looked, written = self._remembered_jobs
        if self.jobs_memory is None or knowledge is None or (looked is not None and now - looked < JOBS_EVERY):
            return
        state = knowledge()
        self._remembered_jobs = (now, written)
        if state == written:
            return
        try:
            runtime.remember(self.jobs_memory, "jobs", state, sync=False)  # pids mean nothing after a reboot
            self._remembered_jobs = (now, state)
        except OSError as exc:
            log.warning("cannot keep what the agent knows of waiting jobs: %s", exc)

    def recall_jobs(self):
        """At any start: go on from what a previous agent of this boot knew of the waiting jobs."""
        recall = getattr(self.sampler, "recall", None)
        kept = runtime.recall(self.jobs_memory, "jobs", 1 << 20) if self.jobs_memory and recall else None
        if kept:
            recall(kept)
            log.info("went on from what a previous agent knew of %d waiting processes", len(kept))

    def recall_ceiling(self):
        """At a start that is not a hand-off: go on from the ceiling a previous agent of this boot kept."""
        kept = runtime.recall_ceiling(self.ceiling_memory) if self.ceiling_memory else None
        if kept is None:
            return
        with self.lock:
            ceiling = Ceiling(self.ceiling.settings)
            try:
                ceiling.restore(kept)
            except ValueError as exc:
                log.warning("ignoring the kept ceiling state: %s", exc)
                return
            self.ceiling, self._remembered_ceiling = ceiling, kept
        log.info("went on from the ceiling state a previous agent kept (%s)", ceiling.state)

    def _loop(self):
        next_at = self.clock()
        while not self._stop.is_set():
            try:
                self.tick()
                self.tick_error = None
            except Exception as exc:  # a bad tick is logged and retried; the thread must not die
                if self.tick_error != str(exc):
                    log.exception("tick failed")
                self.tick_error = str(exc)
            if os.getpid() == 1:
                _reap_children()
            if self.ticks == TRIM_AFTER_TICKS:  # start-up over: the first listings read, every module imported
                runtime.release_freed_memory()
            cb = self.on_tick
            if cb is not None:
                cb()
            next_at += self.tick_seconds
            now = self.clock()
            if next_at < now:
                next_at = now  # overran or the box slept: no catch-up burst
            self._stop.wait(next_at - now)

    def start(self):
        self.timeline.start()
        self._stop.clear()
        if self._thread is not None and self._thread.is_alive():
            return  # a stop that timed out (a slow tick): that thread sees the cleared flag and carries on
        self._thread = threading.Thread(target=self._loop, name="wr-agent-tick", daemon=True)
        self._thread.start()

    def stop(self, timeout=3.0):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.timeline.stop()
        return self._thread is None or not self._thread.is_alive()

    # -- status and requests -------------------------------------------------------------------------------
    def status(self, now=None):
        with self.lock:
            now = self.clock() if now is None else now
            c, s, hb = self.ceiling, self.ceiling.settings, self.heartbeat
            last = self.started if self.last_tick is None else self.last_tick
            stalled = now - last >= STALL_SECONDS
            return {
                "verdict": "BUSY" if self.published_busy else "IDLE",
                "classifier_verdict": "BUSY" if self.classifier_busy else "IDLE",
                # The same reasons twice, in the same order: as text, and as data the app reads (reasons.py).
                "busy_reasons": [reasons_mod.clean_text(r) for r in self.classifier.reasons],
                "structured_reasons": [reasons_mod.clean(r) for r in self.classifier.reasons],
                "hold_until": self.classifier.hold_until(),
                "last_gap": None if self.classifier.last_gap is None else {
                    "at": self.classifier.last_gap[0], "seconds": round(self.classifier.last_gap[1], 3),
                    "busy_before": self.classifier.last_gap[2]},
                "stalled": stalled,
                "checking_until": round(self.started + CHECKING_SECONDS, 3),
                "monotonic": now,
                "awake_seconds": c.awake_seconds(now) if self.classifier_busy else 0.0,
                # How long this stretch of work has gone on, less time asleep (`keep` restarts the ceiling's
                # clock, `awake_seconds`, never this one).
                "busy_seconds": self.span.busy_seconds(now) if self.classifier_busy else None,
                **s.to_dict(),  # every ceiling setting (settings.FIELDS)
                "awake_ceiling_exceeded": c.exceeded,
                "prompt_pending": c.prompt_pending,
                "prompt_deadline": c.prompt_deadline if c.prompt_pending else None,
                "suppressed": c.suppressed,
                "let_sleep": c.suppressed and c.let_sleep_asked,
                "asserting": bool(self.published_busy and hb.enabled and hb.error is None),
                # `sent` counts the heartbeats sent; like `last_sent`, its change alone pushes nothing (a push
                # would reset a network-metered box's idle clock and hide a heartbeat the provider never saw).
                "keep_awake": {"last_sent": hb.last_sent, "error": hb.error, "target": hb.target,
                               "interval_seconds": hb.interval, "enabled": hb.enabled, "sent": hb.sent},
                "settings_error": self.settings_error,
                "workroom": self.workroom,
                "agent": {"version": VERSION, "protocol": PROTOCOL, "build": self.build},
                "sampler": self.sampler.name,
                "tcp": getattr(self.sampler, "tcp_kind", None),
                "test_min_duration": self.test_min_duration,
                "health_listen": self.health_listen,
                "last_busy_span": None if self.span.last is None else dict(self.span.last),
            }

    def prompt_event(self, now=None):
        with self.lock:
            now = self.clock() if now is None else now
            return {"event": "awake_ceiling_prompt", "workroom": self.workroom,
                    "awake_seconds": self.ceiling.awake_seconds(now),
                    "prompt_deadline": self.ceiling.prompt_deadline}

    def keep(self):
        with self.lock:
            now = self.clock()
            self.ceiling.keep(now)
            self.published_busy = self.ceiling.update(now, self.classifier_busy)
            return self.status(now)

    def let_sleep(self):
        """The user's "Let it sleep": published IDLE now, so the heartbeat (and any keep-awake from outside)
        stops and the provider's own timer sleeps the box (docs/protocol.md, `let_sleep`)."""
        with self.lock:
            now = self.clock()
            self.ceiling.let_sleep(now)
            self.published_busy = self.ceiling.update(now, self.classifier_busy)
            return self.status(now)

    def apply_settings(self, params):
        """Validate (raises SettingsError), save, then apply. Nothing changes on any error."""
        with self.lock:
            new = settings_mod.validate(params, self.min_duration, current=self.ceiling.settings)
            if self.saved_settings is not None:
                new.extra = dict(self.saved_settings.extra)  # a newer agent's fields in the file stay there
            if self.settings_path is not None and new != self.saved_settings:
                try:
                    settings_mod.save(self.settings_path, new)
                except OSError as exc:
                    raise settings_mod.SettingsError("failed", "could not save settings to %s: %s"
                                                     % (self.settings_path, exc.strerror or exc)) from None
                self.saved_settings = new
            self.settings_error = None
            now = self.clock()
            self.ceiling.apply_settings(now, new)
            self.published_busy = self.ceiling.update(now, self.classifier_busy)
            return self.status(now)

    def set_exclusions(self, names):
        """Replace the user's "never work" names (raises SettingsError; nothing changes then)."""
        with self.lock:
            names = self.user_exclusions.set(names)
            self._forget_processes = True
            return {"names": names, "problem": None}

    def change_exclusions(self, add, remove):
        """Add and remove "never work" names in the list held now, so two clients changing it at once both keep
        theirs (raises SettingsError; nothing changes then)."""
        with self.lock:
            names = self.user_exclusions.change(add, remove)
            self._forget_processes = True
            return {"names": names, "problem": None}

    def exclusions(self):
        with self.lock:
            return {"names": list(self.user_exclusions.names), "problem": self.user_exclusions.problem}

    def handoff_state(self):
        with self.lock:
            return {"ceiling": self.ceiling.to_state(), "classifier": self.classifier.to_state(),
                    "busy_span": self.span.to_state(),
                    "settings": self.ceiling.settings.to_dict(),
                    "classifier_busy": self.classifier_busy, "published_busy": self.published_busy}

    def restore_state(self, d):
        """Apply a hand-off state (raises ValueError on a malformed one, leaving defaults)."""
        with self.lock:
            settings = settings_mod.from_file(d.get("settings"), self.min_duration)
            ceiling = Ceiling(settings)
            ceiling.restore(d.get("ceiling") or {})
            classifier = Classifier(self.classifier.hold_seconds, self.classifier.tick_seconds,
                                    gap_clock=self.suspend_clock)
            classifier.restore(d.get("classifier") or {})
            span = BusySpan(self.tick_seconds)
            span.restore(d.get("busy_span") or {})
            self.ceiling, self.classifier, self.span = ceiling, classifier, span
            self.classifier_busy = classifier.busy
            self.published_busy = bool(d.get("published_busy")) and classifier.busy


def _reap_children():
    """As PID 1 of a namespace the agent inherits orphans; reap them so zombies do not pile up."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return

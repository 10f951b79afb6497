"""The awake ceiling state machine (docs/agent.md, Awake ceiling), driven by ticks on CLOCK_MONOTONIC.

below -> exceeded (advisory: reported, still BUSY) or prompted(deadline) (ask mode) -> suppressed
(nobody answered: the published verdict is IDLE). `let_sleep` (the user's "Let it sleep") suppresses at once:
the same state, reached now instead of at the prompt's deadline. A classifier IDLE resets to below; `keep` restarts
the ceiling; a sleep ends the span: the ceiling counts awake time, so work after the box wakes (a tick gap) is a new
span, with a fresh ceiling and, in ask mode, a fresh prompt. A client connecting or identical settings reset
nothing. Upstream's hole (a wake-on-connect resetting an unanswered ceiling, so a runaway job is kept up for ever)
cannot arise: the app never wakes an asleep box uninvited (only a person's explicit wake does).
"""

BELOW, EXCEEDED, PROMPTED, SUPPRESSED = "below", "exceeded", "prompted", "suppressed"
STATES = (BELOW, EXCEEDED, PROMPTED, SUPPRESSED)


class Ceiling(object):
    NOT_HANDED_OFF = ()
    """Attributes a hand-off does not carry: none (`to_state`; the settings travel beside it, in the agent's
    state). tests/unit/agent/test_agent_handoff_state.py fails on an attribute neither carried nor named here."""

    def __init__(self, settings):
        self.settings = settings
        self.state = BELOW
        self.awake_start = None  # monotonic time the classifier turned BUSY
        self.prompt_deadline = None
        self.prompt_seq = 0  # bumps once per crossing in ask mode (one prompt event each)
        self.let_sleep_asked = False  # suppressed by the user's answer, not by a prompt running out

    def awake_seconds(self, now):
        return 0.0 if self.awake_start is None else max(0.0, now - self.awake_start)

    def update(self, now, classifier_busy, woke=False):
        """Advance on one tick; return the published verdict (True = BUSY). `woke`: the box slept just before this
        tick (a gap in the agent's ticks): the span before it is over."""
        if woke or not classifier_busy:
            self.state, self.awake_start, self.prompt_deadline = BELOW, None, None
            self.let_sleep_asked = False
        if not classifier_busy:
            return False
        if self.awake_start is None:
            self.awake_start = now
        if self.state == BELOW and now - self.awake_start >= self.settings.ceiling_seconds:
            self._cross(now)
        if self.state == PROMPTED and self.prompt_deadline is not None and now >= self.prompt_deadline:
            self.state = SUPPRESSED
        return self.state != SUPPRESSED

    def _cross(self, now):
        if self.settings.ask_at_ceiling:
            self.state = PROMPTED
            self.prompt_deadline = now + self.settings.prompt_timeout_seconds
            self.prompt_seq += 1
        else:
            self.state = EXCEEDED

    def keep(self, now):
        """The user said keep awake: restart the ceiling from now."""
        if self.awake_start is not None:
            self.awake_start = now
        self.state, self.prompt_deadline = BELOW, None
        self.let_sleep_asked = False

    def let_sleep(self, now):
        """The user said let it sleep: stop keeping the box awake now, as an unanswered prompt does at its
        deadline (the user who says no must not pay for the prompt timeout). Nothing to do while idle."""
        if self.awake_start is None:
            return
        self.state, self.prompt_deadline = SUPPRESSED, None
        self.let_sleep_asked = True

    def apply_settings(self, now, settings):
        """New settings; identical settings change nothing (every app connect sends them)."""
        if settings == self.settings:
            return
        old, self.settings = self.settings, settings
        if self.awake_start is None:
            return
        if self.let_sleep_asked:
            return  # the user's answer stands until the box is idle or kept awake
        if now - self.awake_start < settings.ceiling_seconds:
            self.state, self.prompt_deadline = BELOW, None
        elif self.state in (PROMPTED, SUPPRESSED) and not settings.ask_at_ceiling:
            self.state, self.prompt_deadline = EXCEEDED, None
        elif self.state == EXCEEDED and settings.ask_at_ceiling and not old.ask_at_ceiling:
            self._cross(now)

    @property
    def exceeded(self):
        return self.state != BELOW

    @property
    def prompt_pending(self):
        return self.state == PROMPTED

    @property
    def suppressed(self):
        return self.state == SUPPRESSED

    def to_state(self):
        return {"state": self.state, "awake_start": self.awake_start,
                "prompt_deadline": self.prompt_deadline, "prompt_seq": self.prompt_seq,
                "let_sleep": self.let_sleep_asked}

    def restore(self, d):
        """Restore from a hand-off state dict (values were checked by the caller's JSON load)."""
        state = d.get("state")
        if state not in STATES:
            raise ValueError("bad ceiling state %r" % (state,))
        for key in ("awake_start", "prompt_deadline"):
            v = d.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise ValueError("bad %s %r" % (key, v))
        self.state = state
        self.awake_start = d.get("awake_start")
        self.prompt_deadline = d.get("prompt_deadline")
        self.prompt_seq = int(d.get("prompt_seq") or 0)
        self.let_sleep_asked = d.get("let_sleep") is True and state == SUPPRESSED

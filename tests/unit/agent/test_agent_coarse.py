"""The coarse (ps-based) sampler on recorded `ps` output from Linux and macOS."""

import pytest
from wr_agent.coarse_sampler import CoarseSampler, parse_cputime, parse_ps

pytestmark = pytest.mark.unit

LINUX_PS = """\
    1     0     0 S 00:00:03 systemd
  500     1     0 S 00:00:00 sshd
  600     1  1000 R 00:01:00 cargo
  601   600  1000 D 00:00:00 dd
  602     1  1000 Z 00:00:00 defunct
  700     1     0 S 00:00:00 cron
  701   700  1000 R 00:00:09 backup
"""
MAC_PS = """\
  321     1   501 R      1:02.50 /Applications/Xcode.app/Contents/MacOS/Xcode
  322     1   501 U      0:00.10 /usr/bin/make
"""


def test_parse_cputime_formats():
    assert parse_cputime("00:01:05") == 65
    assert parse_cputime("1-00:00:01") == 86401
    assert parse_cputime("1:02.50") == pytest.approx(62.5)


def test_parse_ps_takes_the_basename_of_mac_paths():
    rows = parse_ps(MAC_PS)
    assert [(r[0], r[5]) for r in rows] == [("321", "Xcode"), ("322", "make")]


class Clock:
    t = 0.0

    def __call__(self):
        return self.t


def test_cpu_between_samples_d_state_and_exclusions():
    clock = Clock()
    outputs = [LINUX_PS, LINUX_PS.replace("00:01:00 cargo", "00:01:04 cargo").replace("00:00:09", "00:00:19")]
    s = CoarseSampler(every=5, clock=clock, self_pid=99999, runner=lambda: outputs.pop(0))
    first = s.sample()
    assert first.coarse and first.dstate == [("dd", "601")] and first.cpu == []
    clock.t = 1.0
    assert s.sample() is first  # between samples the last one stands
    clock.t = 5.0
    sig = s.sample()
    assert [(c, p) for c, p, _ in sig.cpu] == [("cargo", "600")]  # cron's child is excluded
    assert sig.cpu[0][2] == pytest.approx(0.8)


def test_an_excluded_pid_is_forgotten_once_a_listing_lacks_it():
    """`ps` has no start times: an exclusion holds while its process lives, so the number handed out again
    later (a build) is not left out with it."""
    app = "  800     1  1000 R 00:00:00 workroom\n  801   800  1000 D 00:00:00 helper\n"
    later = "  800     1  1000 D 00:00:00 make\n"
    outputs = [app, LINUX_PS, later]
    clock = Clock()
    s = CoarseSampler(every=5, clock=clock, self_pid=99999, runner=lambda: outputs.pop(0), exclude_pids=[("800", "7")])
    assert s.sample().dstate == []  # the app's tree is left out
    clock.t = 5.0
    s.sample()  # 800 is gone
    assert s.exclude_pids == frozenset()
    clock.t = 10.0
    assert s.sample().dstate == [("make", "800")]

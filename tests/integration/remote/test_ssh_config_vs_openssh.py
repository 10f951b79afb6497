"""Differential test: our ssh_config resolution against OpenSSH's own (`ssh -G`) for the same config.

Each case writes a ~/.ssh/config (and any included files) into the home of a throwaway user and runs
`ssh -G` as that user, so `~`, relative `Include` and `Match localuser` resolve as for a real user; the
app's resolver reads the same home (and /etc/ssh/ssh_config, as ssh does). Compared per alias: host name,
user, port, identity files, certificate files, identity agent, host key alias, CheckHostIP,
IdentitiesOnly, the proxy chain (each hop resolved by `ssh -G`, as `ssh -J` runs them) and the known-hosts
files. Differences we keep on purpose are listed in docs/providers.md and applied in `_openssh_view`.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from workroom.remote.ssh_config import SshTarget, resolve_target

pytestmark = [pytest.mark.integration, pytest.mark.root]

AGENT_ENV = "/tmp/wr-agent-from-env.sock"
# OpenSSH's default list also has these two; paramiko reads neither (docs/providers.md).
UNSUPPORTED_DEFAULT_KEYS = ("id_xmss", "id_dsa")


@dataclass
class Case:
    name: str
    config: str
    target: str
    files: dict[str, str] = field(default_factory=dict)  # more files under the home, e.g. .ssh/config.d/x
    login: str | None = None  # ssh -l
    port: int | None = None  # ssh -p


CASES = [
    Case("plain alias", "Host box\n  HostName box.example.com\n  User alice\n  Port 2222\n", "box"),
    Case("no config entry", "", "bare.example.org"),
    Case("wildcards and first wins across blocks",
         "Host *.corp\n  User corpuser\n  Port 2200\nHost db?.corp\n  User dbuser\n  Port 3300\n"
         "Host *\n  User fallback\n", "db1.corp"),
    Case("negation refuses the block", "Host *.corp !bastion.corp\n  User inner\nHost *\n  User outer\n",
         "bastion.corp"),
    Case("negation lets others through", "Host *.corp !bastion.corp\n  User inner\n", "app.corp"),
    Case("equals syntax, keyword case and quoting",
         'HOST quoted\n  hostname=quoted.example\n  USER = "bob"\n  identityFile "~/.ssh/my key"\n', "quoted"),
    Case("typed host is lower-cased before matching", "Host Mixed\n  User cased\nHost mixed\n  User lower\n",
         "MIXED"),
    Case("percent tokens in HostName and IdentityFile",
         "Host tok\n  HostName %h.example.net\n  User ursula\n  Port 2022\n"
         "  IdentityFile ~/.ssh/id_%r_%h_%p\n  IdentityFile %d/.ssh/by_%u_%n\n", "tok"),
    Case("every IdentityFile token, checked against ssh's own expansion of the same ControlPath",
         "Host alltok\n  HostName all.example\n  User tokuser\n  Port 2345\n  HostKeyAlias tokalias\n"
         "  IdentityFile ~/.ssh/%C_%d_%h_%i_%k_%L_%l_%n_%p_%r_%u_%%\n"
         "  ControlPath ~/.ssh/%C_%d_%h_%i_%k_%L_%l_%n_%p_%r_%u_%%\n", "alltok"),
    Case("identity files accumulate across blocks, duplicates once",
         "Host acc\n  IdentityFile ~/.ssh/first\nHost *\n  IdentityFile ~/.ssh/second\n"
         "  IdentityFile ~/.ssh/first\n", "acc"),
    Case("Include relative to ~/.ssh with a glob",
         "Include config.d/*\nHost *\n  User late\n", "orb",
         files={".ssh/config.d/10-orb": "Host orb\n  HostName 127.0.0.1\n  Port 32222\n  User orbuser\n",
                ".ssh/config.d/20-other": "Host other\n  HostName other.example\n"}),
    Case("Include with ~ and an absolute path, nested",
         "Include ~/.ssh/extra.conf\n", "nested",
         files={".ssh/extra.conf": "Include {HOME}/abs.conf\nHost nested\n  Port 4444\n",
                "abs.conf": "Host nested\n  HostName nested.example\n  User deep\n"}),
    Case("Include inside a Host block applies only to that host",
         "Host scoped\n  Include scoped.conf\nHost *\n  Port 2202\n", "scoped",
         files={".ssh/scoped.conf": "User scopeduser\nHost scoped\n  HostName in-scope.example\n"}),
    Case("Include inside a non-matching Host block is inert",
         "Host elsewhere\n  Include inert.conf\nHost *\n  User outside\n", "inert",
         files={".ssh/inert.conf": "User inertuser\nHost inert\n  HostName never.example\n"}),
    Case("Include inside Match",
         "Match host mhost\n  Include match.conf\n", "mhost",
         files={".ssh/match.conf": "User fromincluded\n  Port 2345\n"}),
    Case("Include of a missing glob is no error", "Include nothing.d/*\nHost miss\n  User found\n", "miss"),
    Case("ProxyCommand before ProxyJump: the command wins (with fd passing, as OrbStack writes it)",
         "Host pc\n  ProxyCommand nc %h %p\n  ProxyJump jumpy\n  ProxyUseFdpass yes\n", "pc"),
    Case("ProxyJump before ProxyCommand: the jump wins",
         "Host pj\n  ProxyJump jumpy\nHost *\n  ProxyCommand nc %h %p\n", "pj"),
    Case("ProxyJump none blocks a later ProxyCommand",
         "Host pn\n  ProxyJump none\nHost *\n  ProxyCommand nc %h %p\n", "pn"),
    Case("a chain: the first hop keeps its own jump",
         "Host target\n  ProxyJump hop1,hop2\nHost hop1\n  HostName hop1.example\n  ProxyJump gate\n"
         "Host hop2\n  HostName hop2.example\n  User h2\n  ProxyJump ignored\nHost gate\n  Port 2201\n", "target"),
    Case("a jump spec with user and port", "Host jt\n  ProxyJump juser@jhost:2022\n", "jt"),
    Case("Match user sees the user typed in user@host",
         "Match user carol\n  Port 2525\n  IdentityFile ~/.ssh/carol\n", "carol@mu"),
    Case("Match user sees ssh -l", "Match user dave\n  Port 2626\n", "mu2", login="dave"),
    Case("Match originalhost and host after HostName",
         "Host orig\n  HostName real.example\nMatch originalhost orig\n  User byorig\n"
         "Match host real.example\n  Port 2727\n", "orig"),
    Case("Match localuser and negated criteria",
         "Match localuser {USER}\n  User fromlocal\nMatch !localuser {USER}\n  Port 1\n", "lu"),
    Case("Match exec with tokens", "Match exec \"test %h = execbox\"\n  User execd\n"
         "Match exec false\n  Port 1\n", "execbox"),
    Case("Match final sees the resolved host name",
         "Host fin\n  HostName final.example\nHost final.example\n  User finaluser\n"
         "Match final host final.example\n  Port 2828\nMatch canonical\n  IdentityFile ~/.ssh/canon\n", "fin"),
    Case("CanonicalizeHostname runs the final pass",
         "Host canon\n  CanonicalizeHostname yes\n  CanonicalDomains invalid\nMatch canonical\n  User canonical\n",
         "canon"),
    Case("CanonicalizeHostname with a ProxyCommand still runs the final pass",
         "Host cpc\n  CanonicalizeHostname yes\n  ProxyCommand nc %h %p\nMatch canonical\n  User cano\n"
         "Host other\n  CanonicalizeHostname no\nMatch canonical\n  Port 7\n", "cpc"),
    Case("IdentityAgent path with ~ and %d",
         "Host ia\n  IdentityAgent ~/agent.sock\nHost ib\n  IdentityAgent %d/other.sock\n", "ia"),
    Case("IdentityAgent %d", "Host ib\n  IdentityAgent %d/other.sock\n", "ib"),
    Case("IdentityAgent none", "Host ic\n  IdentityAgent none\n", "ic"),
    Case("IdentityAgent SSH_AUTH_SOCK", "Host id\n  IdentityAgent SSH_AUTH_SOCK\n", "id"),
    Case("known hosts files, alias and CheckHostIP",
         "Host kh\n  UserKnownHostsFile ~/.ssh/kh1 ~/.ssh/kh2 %d/kh3\n  GlobalKnownHostsFile /etc/ssh/other_known\n"
         "  HostKeyAlias khalias\n  CheckHostIP yes\n", "kh"),
    Case("certificates and IdentitiesOnly",
         "Host cert\n  IdentityFile ~/.ssh/id_ed25519\n  CertificateFile ~/.ssh/id_ed25519-cert.pub\n"
         "  CertificateFile %d/.ssh/%r-cert.pub\n  IdentitiesOnly yes\n", "cert"),
    Case("ssh -p beats the config", "Host pp\n  Port 2000\n", "pp", port=3000),
    Case("HostName set only in the final pass", "Match final\n  HostName late.example\n", "early"),
    Case("ProxyCommand none blocks a later ProxyJump", "Host pcn\n  ProxyCommand none\nHost *\n  ProxyJump j\n",
         "pcn"),
    Case("several patterns on one Host line", "Host one two three\n  User listed\n", "two"),
    Case("IdentityFile none and ${VAR}", "Host idn\n  IdentityFile none\nHost env\n  IdentityFile ${HOME}/k\n",
         "idn"),
    Case("IdentityFile with ${VAR}, CertificateFile none",
         "Host env\n  IdentityFile ${HOME}/.ssh/envkey\n  CertificateFile none\n", "env"),
]


@pytest.fixture(scope="module")
def oracle_user():
    """A throwaway user (name unique by pid) whose home holds the config; deleted after the module."""
    if os.geteuid() != 0 or shutil.which("ssh") is None:
        pytest.skip("needs root (to run ssh -G as a throwaway user) and the OpenSSH client")
    name = f"wrg{os.getpid()}"
    home = Path("/home") / name
    subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh",
                    "--user-group", name], check=True, capture_output=True, timeout=30)
    try:
        entry = pwd.getpwnam(name)
        yield entry
    finally:
        subprocess.run(["userdel", "-r", "-f", name], capture_output=True, timeout=30)
        shutil.rmtree(home, ignore_errors=True)


def _install(entry: pwd.struct_passwd, case: Case) -> Path:
    home = Path(entry.pw_dir)
    shutil.rmtree(home, ignore_errors=True)
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    files = {".ssh/config": case.config, **case.files}
    for rel, text in files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(text.replace("{HOME}", str(home)).replace("{USER}", entry.pw_name))
        path.chmod(0o600)
    for path in [home, *home.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)
    return home


def _environ(entry: pwd.struct_passwd) -> dict[str, str]:
    return {"HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name, "SHELL": "/bin/sh",
            "PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": AGENT_ENV}


def _ssh_g(entry: pwd.struct_passwd, args: list[str]) -> dict[str, list[str]]:
    done = subprocess.run(["runuser", "-u", entry.pw_name, "--", "env", "-i",
                           *(f"{k}={v}" for k, v in _environ(entry).items()), "ssh", "-G", *args],
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, cwd="/")
    assert done.returncode == 0, done.stderr
    seen: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        seen.setdefault(key.lower(), []).append(value)
    return seen


def _expand(raw: str, *, home: str, tokens: dict[str, str]) -> str:
    """The test's own small expander for what ssh -G prints unexpanded (IdentityFile, ProxyCommand)."""
    raw = raw.replace("${HOME}", home)
    if raw.startswith("~/"):
        raw = home + raw[1:]
    out, i = [], 0
    while i < len(raw):
        if raw[i] == "%" and i + 1 < len(raw):
            out.append("%" if raw[i + 1] == "%" else tokens[raw[i + 1]])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return "".join(out)


def _openssh_view(entry: pwd.struct_passwd, args: list[str], original: str) -> dict[str, object]:
    g = _ssh_g(entry, args)
    home = entry.pw_dir
    hostname, user, port = g["hostname"][0], g["user"][0], g["port"][0]
    tokens = {"h": hostname, "r": user, "p": port, "u": entry.pw_name, "d": home, "n": original.lower(),
              "k": g.get("hostkeyalias", [original.lower()])[0],
              "l": socket.gethostname(), "L": socket.gethostname().split(".")[0]}
    raw_identities = [f for f in g.get("identityfile", [])
                      if f != "none" and not any(f.endswith("/" + name) for name in UNSUPPORTED_DEFAULT_KEYS)]
    if "controlpath" in g and len(raw_identities) == 1:
        identities = [g["controlpath"][0]]  # the same text, expanded by ssh itself
    else:
        identities = [_expand(f, home=home, tokens=tokens) for f in raw_identities]
    agent = g.get("identityagent", ["SSH_AUTH_SOCK"])[0]
    view: dict[str, object] = {
        "hostname": hostname, "user": user, "port": int(port),
        "identity_files": identities,
        "certificate_files": [_expand(f, home=home, tokens=tokens) for f in g.get("certificatefile", [])
                              if f != "none"],
        "identity_agent": {"none": None, "SSH_AUTH_SOCK": AGENT_ENV}.get(agent, agent),
        "user_known_hosts": g["userknownhostsfile"][0].split(),
        "global_known_hosts": g["globalknownhostsfile"][0].split(),
        "host_key_alias": g.get("hostkeyalias", [None])[0],
        "check_host_ip": g["checkhostip"][0] == "yes",
        "identities_only": g["identitiesonly"][0] == "yes",
        "proxy_use_fdpass": g["proxyusefdpass"][0] == "yes",
        "proxy_command": None, "jump": None,
    }
    if "proxycommand" in g:
        view["proxy_command"] = _expand(g["proxycommand"][0], home=home, tokens=tokens)
    elif "proxyjump" in g:
        hops = g["proxyjump"][0].split(",")
        last, rest = hops[-1], ",".join(hops[:-1])
        hop_user, _, hop_host = last.rpartition("@")
        hop_host, _, hop_port = hop_host.partition(":")
        hop_args = [*(["-l", hop_user] if hop_user else []), *(["-p", hop_port] if hop_port else []),
                    *(["-J", rest] if rest else []), hop_host]
        view["jump"] = _openssh_view(entry, hop_args, hop_host)
    return view


def _our_view(target: SshTarget) -> dict[str, object]:
    return {
        "hostname": target.hostname, "user": target.user, "port": target.port,
        "identity_files": [str(p) for p in target.identity_files],
        "certificate_files": [str(p) for p in target.certificate_files],
        "identity_agent": target.identity_agent,
        "user_known_hosts": [str(p) for p in target.user_known_hosts_files],
        "global_known_hosts": [str(p) for p in target.global_known_hosts_files],
        "host_key_alias": target.host_key_alias,
        "check_host_ip": target.check_host_ip,
        "identities_only": target.identities_only,
        "proxy_use_fdpass": target.proxy_use_fdpass,
        "proxy_command": target.proxy_command,
        "jump": _our_view(target.proxy_jump) if target.proxy_jump is not None else None,
    }


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_resolution_matches_ssh_minus_g(oracle_user, case: Case) -> None:
    home = _install(oracle_user, case)
    args = [*(["-l", case.login] if case.login else []), *(["-p", str(case.port)] if case.port else []),
            case.target]
    expected = _openssh_view(oracle_user, args, case.target.rpartition("@")[2])
    ours = resolve_target(case.target, user=case.login, port=case.port, home=home,
                          local_user=oracle_user.pw_name, local_uid=oracle_user.pw_uid, environ=_environ(oracle_user))
    assert _our_view(ours) == expected

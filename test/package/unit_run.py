#!/usr/bin/env python3
"""Run one instance of a packaged systemd unit as systemd would, where
systemd is not PID 1: test/package/deb.sh uses it.

    unit_run.py UNITFILE INSTANCE [--check 'SHELL COMMAND'] [--timeout S]

From the unit's [Service] section it takes User=, Group=, Environment=,
EnvironmentFile= and ExecStart= (with %i and systemd's ${VAR} / $VAR
expansion), runs the command as that user (setpriv, the same process),
with NOTIFY_SOCKET and, when WatchdogSec= is set, WATCHDOG_USEC and
WATCHDOG_PID, and then requires what systemd requires of Type=notify:
READY=1 within the timeout; WATCHDOG=1 within WatchdogSec; after
SIGTERM, STOPPING=1 and exit status 0.  --check runs once READY=1 came
and must succeed within the timeout (retried every 0.2 s) while the
daemon runs.  Prints what it did; exits non-zero on any failure.
"""
import os, re, shlex, signal, socket, subprocess, sys, tempfile, time


def parse_unit(path):
    service, section = {}, None
    for raw in open(path):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            k, v = line.split("=", 1)
            service.setdefault(k.strip(), []).append(v.strip())
    return service


def env_file(path):
    env = {}
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        k, v = line.split("=", 1)
        words = shlex.split(v)
        env[k.strip()] = " ".join(words)
    return env


def expand(cmd, env):
    """systemd: ${VAR} is one word, $VAR splits on white space."""
    out = []
    for word in shlex.split(cmd):
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            out.extend(env.get(m.group(1), "").split())
            continue
        out.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), word))
    return out


def seconds(v):
    m = re.fullmatch(r"(\d+)(s|min)?", v)
    return int(m.group(1)) * (60 if m.group(2) == "min" else 1)


def main():
    args = sys.argv[1:]
    check, timeout = None, 30.0
    if "--check" in args:
        i = args.index("--check"); check = args[i + 1]; del args[i:i + 2]
    if "--timeout" in args:
        i = args.index("--timeout"); timeout = float(args[i + 1]); del args[i:i + 2]
    unit, instance = args
    svc = parse_unit(unit)
    sub = lambda s: s.replace("%i", instance)
    if svc.get("Type", [""])[-1] != "notify":
        sys.exit("unit is not Type=notify")
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    for e in svc.get("Environment", []):
        for word in shlex.split(sub(e)):
            k, v = word.split("=", 1)
            env[k] = v
    for f in svc.get("EnvironmentFile", []):
        env.update(env_file(sub(f).lstrip("-")))
    argv = expand(sub(svc["ExecStart"][-1]), env)
    user, group = svc["User"][-1], svc.get("Group", svc["User"])[-1]
    wd = seconds(svc["WatchdogSec"][-1]) if "WatchdogSec" in svc else 0

    sockdir = tempfile.mkdtemp(prefix="unit-run.")
    os.chmod(sockdir, 0o755)
    path = os.path.join(sockdir, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    os.chmod(path, 0o777)
    env["NOTIFY_SOCKET"] = path
    if wd:
        # short, so that a ping is seen within the test's time
        env["WATCHDOG_USEC"] = str(2 * 1000000)
    print("unit_run: %s as %s: %s" % (os.path.basename(unit), user, " ".join(argv)), flush=True)

    cmd = ["setpriv", "--reuid=" + user, "--regid=" + group, "--init-groups", "--"] + argv
    # setpriv execs the daemon in the same process: its pid is WATCHDOG_PID
    pid = os.fork()
    if pid == 0:
        if wd:
            env["WATCHDOG_PID"] = str(os.getpid())
        os.chdir("/")
        os.execvpe(cmd[0], cmd, env)
    seen = set()
    failures = []
    reaped = []                 # the exit status, once waitpid has it

    def exited():
        if not reaped:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                reaped.append(status)
        return reaped[0] if reaped else None

    def wait_for(state, limit):
        deadline = time.time() + limit
        while state not in seen:
            left = deadline - time.time()
            status = exited()
            if status is not None:
                return status
            if left <= 0:
                return None
            sock.settimeout(min(left, 0.2))
            try:
                msg = sock.recv(4096).decode()
            except socket.timeout:
                continue
            for line in msg.split("\n"):
                if line and line not in seen:
                    print("unit_run: notify %s" % line, flush=True)
                seen.add(line)
        return True

    r = wait_for("READY=1", timeout)
    if r is not True:
        failures.append("no READY=1 within %ss (%s)" % (timeout, "exited %s" % r if r else "still running"))
    if not failures and wd:
        seen.discard("WATCHDOG=1")
        if wait_for("WATCHDOG=1", 3) is not True:
            failures.append("no WATCHDOG=1 within 3 s (WATCHDOG_USEC 2 s)")
    if not failures and check:
        deadline = time.time() + timeout
        while True:
            rc = subprocess.call(["bash", "-c", check])
            if rc == 0:
                print("unit_run: check passed: %s" % check, flush=True)
                break
            if time.time() > deadline:
                failures.append("check failed: %s" % check)
                break
            time.sleep(0.2)
    if exited() is None:
        os.kill(pid, signal.SIGTERM)
    end = time.time() + 30
    status = None
    while time.time() < end:
        status = exited()
        if status is not None:
            break
        wait_for("STOPPING=1", 0.2)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        failures.append("did not exit within 30 s of SIGTERM")
    else:
        # drain what was sent before the exit
        sock.setblocking(False)
        try:
            while True:
                seen.add(sock.recv(4096).decode().strip())
        except BlockingIOError:
            pass
        if "STOPPING=1" not in seen:
            failures.append("no STOPPING=1 after SIGTERM")
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            failures.append("exit status %r after SIGTERM, not 0" % status)
    os.unlink(path)
    os.rmdir(sockdir)
    for f in failures:
        print("unit_run: FAIL: " + f, flush=True)
    sys.exit(1 if failures else 0)


main()

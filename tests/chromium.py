"""Headless Chromium (Debian's chromium) driven through the DevTools protocol
over a pipe (--remote-debugging-pipe: JSON messages ended by NUL on file
descriptors 3 and 4), so that no port is opened and nothing beyond the
standard library is needed. Used by tests/test_view.py.

    with Chromium() as b:
        b.open("file:///.../view.html")       # waits for the load event
        b.eval("document.title")
        b.mouse("mouseMoved", x, y)
        b.errors(), b.requests                 # script errors, every URL requested
"""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

# Why each flag: --no-sandbox, because Chromium's sandbox refuses to run as
# root and needs user namespaces that containers often lack (the page is the
# test's own file); --headless=new, the headless mode of the full browser;
# the --disable-* flags keep the browser's own background traffic (updates,
# sync, field trials) from starting, so requests are the page's alone.
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-dev-shm-usage",
         "--metrics-recording-only", "--mute-audio", "--hide-scrollbars", "--window-size=1400,1000"]


def executable():
    """The Chromium binary, or None when it is not installed."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Chromium:
    def __init__(self, exe=None, timeout=60):
        self.exe, self.timeout = exe or executable(), timeout
        self.profile = tempfile.mkdtemp(prefix="aha_chromium_")
        # Chromium reads commands on fd 3 and writes on fd 4; its pipe ends are
        # moved above 9 first, so that making them 3 and 4 overwrites neither
        pipes = [os.pipe(), os.pipe()]
        cmd_r, out_w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (pipes[0][0], pipes[1][1]))
        self._cmd_w, self._out_r = pipes[0][1], pipes[1][0]
        os.close(pipes[0][0])
        os.close(pipes[1][1])
        self.log = open(os.path.join(self.profile, "chromium.log"), "wb")
        shell = f'exec "$0" "$@" 3<&{cmd_r} 4>&{out_w} {cmd_r}<&- {out_w}>&-'
        self.proc = subprocess.Popen(["bash", "-c", shell, self.exe, *FLAGS, f"--user-data-dir={self.profile}"],
                                     pass_fds=(cmd_r, out_w), stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        os.close(cmd_r)
        os.close(out_w)
        self._buf, self._id, self.events, self.session = b"", 0, [], None
        self.requests = []  # every URL the page asked for (Network.requestWillBeSent)

    def __enter__(self):
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.call(domain + ".enable")
            self.call("Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.__exit__()  # the browser stopped and its profile removed (the error holds the log's end)
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.call("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _log_end(self):
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return f.read()[-600:].decode(errors="replace")

    def _read(self, deadline):
        """The next message from the browser."""
        while b"\0" not in self._buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self._out_r], [], [], left)[0]:
                raise TimeoutError(f"no answer from {self.exe} in {self.timeout} s; its log ends: {self._log_end()}")
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"{self.exe} ended (exit {self.proc.poll()}); its log ends: {self._log_end()}")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        m = json.loads(msg)
        if m.get("method") == "Network.requestWillBeSent":
            self.requests.append(m["params"]["request"]["url"])
        return m

    def call(self, method, session=True, **params):
        """Send one command and wait for its answer (events meanwhile are kept)."""
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + self.timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, since=0):
        """Wait for event method, counting those received from events[since] on."""
        deadline = time.time() + self.timeout
        while True:
            for m in self.events[since:]:
                if m.get("method") == method:
                    return m["params"]
            self.events.append(self._read(deadline))

    def open(self, url):
        """Navigate, and wait for this page's load event (not an earlier page's)."""
        since = len(self.events)
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", since)

    def eval(self, expr):
        """The value of a JavaScript expression (a promise is awaited); its exception raises."""
        r = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr[:80]}: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r["result"].get("value")

    def mouse(self, kind, x, y, button="none", clicks=0):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button=button, clickCount=clicks)

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, "left", 1)
        self.mouse("mouseReleased", x, y, "left", 1)

    def errors(self):
        """Script errors so far: uncaught exceptions, console.error, error log entries (CSP violations among them)."""
        out = []
        for m in self.events:
            p = m.get("params", {})
            if m.get("method") == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append(d.get("exception", {}).get("description") or d.get("text"))
            elif m.get("method") == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif m.get("method") == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append("log: " + p["entry"]["text"])
        return out

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

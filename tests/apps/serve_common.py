"""What the `nascent serve` tests share: a small random-weight model with a
ChatML template (`nascent make-model`), a server on a free loopback port
with bounded start-up and shut-down, and plain-HTTP helpers (standard
library only)."""
import http.client
import json
import os
import re
import signal
import subprocess
import time

CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n"
          "{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def make_model(binary, folder, seed=1, name="model.gguf", dim=64, layers=2):
    """A random model; the default one decodes thousands of tokens/s, a
    wider one (dim 256, 4 layers) is slow enough to be caught mid-request."""
    tmpl = os.path.join(folder, "chatml.jinja")
    with open(tmpl, "w") as f:
        f.write(CHATML)
    path = os.path.join(folder, name)
    subprocess.run([binary, "make-model", path, "--dim", str(dim),
                    "--layers", str(layers), "--heads", "4", "--kv-heads",
                    "2", "--ffn", str(dim * 5 // 2), "--vocab-size", "320",
                    "--ctx", "2048", "--seed", str(seed), "--chat-template",
                    tmpl], check=True, capture_output=True, timeout=60)
    return path


class Server:
    """`nascent serve` on 127.0.0.1 and a port the kernel picks."""

    def __init__(self, binary, model, *args):
        self.proc = subprocess.Popen(
            [binary, "serve", "-m", model, "--port", "0", "-t", "2", *args],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.log = []
        deadline = time.time() + 30
        self.port = None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("server did not start: " + "".join(self.log))
        self.base = "http://127.0.0.1:%d" % self.port

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Sends the signal; returns the exit status (killed after timeout)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        self.log += self.proc.stderr.readlines()
        return rc

    def connect(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)

    def request(self, method, path, body=None, headers=None, raw=None):
        """(status, parsed JSON or text) of one request."""
        c = self.connect()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        data = raw if raw is not None else (
            None if body is None else json.dumps(body))
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode("utf-8")
        c.close()
        try:
            return r.status, json.loads(text)
        except ValueError:
            return r.status, text

    def metrics(self):
        status, text = self.request("GET", "/metrics")
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.split()
                out[name] = float(value)
        return out

    def wait_idle(self, seconds=10):
        """True once /health shows no slot processing."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            status, h = self.request("GET", "/health")
            if status == 200 and h["slots_processing"] == 0:
                return True
            time.sleep(0.05)
        return False


def sse_events(response):
    """The data payloads of a server-sent-event stream, as sent (bytes),
    checking the framing: 'data: ' lines, comments, blank separators."""
    events = []
    pending = None
    while True:
        line = response.readline()
        if not line:
            break
        assert line.endswith(b"\n"), line
        line = line.rstrip(b"\n")
        if line == b"":
            if pending is not None:
                events.append(pending)
            pending = None
        elif line.startswith(b":"):
            continue
        else:
            assert line.startswith(b"data: "), line
            assert pending is None, "two data lines in one event"
            pending = line[len(b"data: "):]
    assert pending is None, "the stream ended inside an event"
    return events

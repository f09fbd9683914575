#!/usr/bin/env python3
"""`nascent serve` over plain HTTP on loopback, with a random-weight model:
curl's view of the SSE framing (data lines, blank separators, [DONE], the
usage chunk) and streamed text equal to the non-streamed text; errors in
OpenAI's JSON shape with their statuses (400, 401, 404, 413, 503); 16
concurrent streaming greedy clients each getting exactly the tokens they
get alone; a client that drops mid-stream freeing its slot; /tokenize,
/detokenize, /metrics; a server with a draft model (--model-draft) giving
the same greedy tokens and seeded samples; SIGTERM ending the server
cleanly with a stream in flight. Every loop is bounded in count and time.

Usage: serve_http_test.py NASCENT_BINARY
Exit status: 0 passed, 1 failed, 77 skipped (no curl).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_common import Server, make_model, sse_events  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def completion(max_tokens, prompt, **kw):
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "logprobs": 0}
    body.update(kw)
    return body


def solo(srv, body):
    """(text, token pieces, finish_reason) of a non-streaming request."""
    status, r = srv.request("POST", "/v1/completions", body)
    assert status == 200, (status, r)
    c = r["choices"][0]
    return c["text"], c["logprobs"]["tokens"], c["finish_reason"]


def stream(srv, body, results, key, drop_after=None):
    """Streams a completion; stores (text, pieces, finish, events)."""
    body = dict(body, stream=True)
    conn = srv.connect()
    conn.request("POST", "/v1/completions", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    if drop_after is not None:
        # Read a few events, then vanish without a word.
        got = 0
        while got < drop_after:
            line = r.readline()
            if line.startswith(b"data: "):
                got += 1
        conn.sock.close()
        conn.close()
        results[key] = got
        return
    events = sse_events(r)
    conn.close()
    text, pieces, finish = "", [], None
    for e in events[:-1]:
        j = json.loads(e.decode("utf-8"))  # Strict UTF-8 per event.
        c = j["choices"][0]
        text += c["text"]
        if c["logprobs"]:
            pieces += c["logprobs"]["tokens"]
        finish = c["finish_reason"] or finish
    results[key] = (text, pieces, finish, events)


def test_framing_with_curl(srv):
    body = completion(12, "Once upon a time", stream=True,
                      stream_options={"include_usage": True})
    out = subprocess.run(
        ["curl", "-sS", "-N", "--max-time", "30", "-H",
         "Content-Type: application/json", "-d", json.dumps(body),
         srv.base + "/v1/completions"], capture_output=True, timeout=60)
    check(out.returncode == 0, "curl: exit %d %s" % (out.returncode,
                                                     out.stderr))
    raw = out.stdout
    check(raw.endswith(b"data: [DONE]\n\n"), "SSE ends with [DONE]: %r" %
          raw[-40:])
    blocks = [b for b in raw.split(b"\n\n") if b]
    datas = []
    for b in blocks:
        lines = [x for x in b.split(b"\n") if not x.startswith(b":")]
        if not lines:
            continue
        check(len(lines) == 1 and lines[0].startswith(b"data: "),
              "SSE block is one data line: %r" % b)
        datas.append(lines[0][6:])
    check(datas[-1] == b"[DONE]", "last event is [DONE]")
    chunks = [json.loads(d) for d in datas[:-1]]
    usage = chunks[-1]
    check(usage["choices"] == [] and usage["usage"]["completion_tokens"] > 0,
          "usage chunk last: %s" % usage)
    check(all(c["object"] == "text_completion" and "usage" in c
              for c in chunks), "chunk objects")
    streamed = "".join(c["choices"][0]["text"] for c in chunks[:-1])
    text, pieces, finish = solo(srv, completion(12, "Once upon a time"))
    check(streamed == text, "streamed text %r == whole %r" % (streamed, text))
    check(usage["usage"]["completion_tokens"] == len(pieces),
          "usage counts the tokens: %s vs %d" % (usage["usage"], len(pieces)))
    finishes = [c["choices"][0]["finish_reason"] for c in chunks[:-1]]
    check(finishes[-1] == finish and all(f is None for f in finishes[:-1]),
          "finish_reason only on the last chunk: %s" % finishes)


def test_n_choices_streamed(srv):
    """n = 3 sampled chat choices, streamed interleaved, equal the same
    request's non-streamed choices (the seed fixes them)."""
    body = {"messages": [{"role": "user", "content": "hi"}], "n": 3,
            "max_tokens": 12, "seed": 4, "temperature": 1.0}
    conn = srv.connect()
    conn.request("POST", "/v1/chat/completions",
                 body=json.dumps(dict(body, stream=True)),
                 headers={"Content-Type": "application/json"})
    events = sse_events(conn.getresponse())
    conn.close()
    streamed = {}
    for e in events[:-1]:
        for c in json.loads(e)["choices"]:
            streamed[c["index"]] = streamed.get(c["index"], "") + (
                c["delta"].get("content") or "")
    status, r = srv.request("POST", "/v1/chat/completions", body)
    whole = {c["index"]: c["message"]["content"] for c in r["choices"]}
    check(status == 200 and streamed == whole and len(whole) == 3,
          "n = 3 streamed %r == whole %r" % (streamed, whole))


def test_errors(srv, binary, model, slow_model):
    def expect(status, method, path, body=None, raw=None, param=None,
               headers=None):
        got, r = srv.request(method, path, body, raw=raw, headers=headers)
        ok = got == status and isinstance(r, dict) and "error" in r and \
            isinstance(r["error"].get("message"), str) and \
            isinstance(r["error"].get("type"), str)
        if ok and param is not None:
            ok = r["error"].get("param") == param
        check(ok, "%s %s -> %d %s (wanted %d, param %s)" %
              (method, path, got, r, status, param))

    expect(400, "POST", "/v1/completions", raw="{not json")
    expect(400, "POST", "/v1/completions", raw="[1, 2]")
    expect(400, "POST", "/v1/completions", {"max_tokens": 3}, param="prompt")
    expect(400, "POST", "/v1/completions",
           completion(3, "x", temperature=3), param="temperature")
    expect(400, "POST", "/v1/completions",
           completion(3, "x", top_p="high"), param="top_p")
    expect(400, "POST", "/v1/completions", completion(3, "x", n=0),
           param="n")
    expect(400, "POST", "/v1/completions", completion(3, "x", stop=[""]),
           param="stop")
    expect(400, "POST", "/v1/completions", completion(0, "x"),
           param="max_tokens")
    expect(400, "POST", "/v1/chat/completions", {"messages": []},
           param="messages")
    expect(400, "POST", "/v1/chat/completions",
           {"messages": [{"role": "wizard", "content": "x"}]},
           param="messages")
    expect(404, "GET", "/v1/nothing")
    expect(404, "POST", "/v2/completions", {"prompt": "x"})
    # A prompt longer than a slot's context (512 here): 413.
    expect(413, "POST", "/v1/completions",
           completion(3, list(range(3, 303)) * 2), param="prompt")
    # A body larger than --max-body (64 KiB here): 413.
    expect(413, "POST", "/v1/completions",
           raw=json.dumps(completion(3, "a" * 70000)))

    keyed = Server(binary, model, "-np", "1", "--api-key", "sekret")
    try:
        got, r = keyed.request("GET", "/health")
        check(got == 200, "/health needs no key")
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            got, r = keyed.request("POST", "/v1/completions",
                                   completion(2, "x"), headers=headers)
            check(got == 401 and r["error"]["code"] == "invalid_api_key",
                  "401 without the key: %d %s" % (got, r))
        got, r = keyed.request("POST", "/v1/completions", completion(2, "x"),
                               headers={"Authorization": "Bearer sekret"})
        check(got == 200, "200 with the key: %d %s" % (got, r))
    finally:
        keyed.stop()

    # One slot, no queue: a second request while the first runs gets 503.
    busy = Server(binary, slow_model, "-np", "1", "--max-queue", "0")
    try:
        results = {}
        t = threading.Thread(target=stream, args=(
            busy, completion(500, "long one", ignore_eos=True), results,
            "long"))
        t.start()
        deadline = time.time() + 10
        while time.time() < deadline:
            if busy.request("GET", "/health")[1]["slots_processing"] == 1:
                break
            time.sleep(0.02)
        got, r = busy.request("POST", "/v1/completions", completion(2, "x"))
        check(got == 503 and "error" in r, "503 when full: %d %s" % (got, r))
        t.join(60)
        check(not t.is_alive(), "the long stream ended")
    finally:
        busy.stop()


def test_concurrent_greedy(srv):
    prompts = ["Prompt number %d says %s" % (i, "xyz"[: i % 4] * (i + 1))
               for i in range(16)]
    want = [solo(srv, completion(24, p)) for p in prompts]
    before = srv.metrics()
    results = {}
    threads = [threading.Thread(target=stream, args=(
        srv, completion(24, p), results, i)) for i, p in enumerate(prompts)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    check(all(not t.is_alive() for t in threads), "16 streams finished")
    for i in range(16):
        got = results.get(i)
        check(got is not None and got[:3] == want[i],
              "client %d: streamed %r, alone %r" % (
                  i, got and got[:3], want[i]))
    after = srv.metrics()
    check(after["nascent_requests_total"] - before["nascent_requests_total"]
          == 16, "16 requests counted")
    check(srv.wait_idle(), "slots idle after the streams")
    print("16 concurrent streams: %.2f s" % (time.time() - t0), flush=True)


def test_drop_frees_slot(srv):
    before = srv.metrics()
    results = {}
    stream(srv, completion(2000, "a story that never ends", ignore_eos=True),
           results, "drop", drop_after=3)
    check(srv.wait_idle(10), "a dropped stream frees its slot")
    after = srv.metrics()
    made = after["nascent_generated_tokens_total"] - \
        before["nascent_generated_tokens_total"]
    check(made < 100, "generation stopped after the drop (%d tokens)" % made)
    check(after["nascent_streams_dropped_total"] >
          before["nascent_streams_dropped_total"], "the drop is counted")
    # The slot serves the next request as if nothing happened.
    text, pieces, _ = solo(srv, completion(8, "after the drop"))
    check(len(pieces) > 0, "a request after the drop runs")


def test_tokenize(srv):
    got, r = srv.request("POST", "/tokenize",
                         {"content": "hello world", "add_special": True})
    check(got == 200 and r["tokens"][0] == 1, "/tokenize adds BOS: %s" % r)
    got, d = srv.request("POST", "/detokenize", {"tokens": r["tokens"][1:]})
    check(got == 200 and d["content"].strip() == "hello world",
          "/detokenize: %s" % d)
    got, d = srv.request("POST", "/detokenize", {"tokens": [10 ** 6]})
    check(got == 400, "/detokenize refuses a bad id")
    got, m = srv.request("GET", "/v1/models")
    check(got == 200 and m["data"][0]["id"] == "model.gguf", "/v1/models")


def test_draft(srv, binary, model, draft):
    """Concurrent greedy streams through speculative decoding get the
    tokens the plain server gives; a seeded sampled request repeats."""
    prompts = ["Draft prompt %d: %s" % (i, "ab" * i) for i in range(4)]
    want = [solo(srv, completion(20, p)) for p in prompts]
    spec = Server(binary, model, "-np", "4", "-md", draft, "--draft", "3")
    try:
        results = {}
        threads = [threading.Thread(target=stream, args=(
            spec, completion(20, p), results, i))
            for i, p in enumerate(prompts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for i in range(4):
            got = results.get(i)
            check(got is not None and got[:3] == want[i],
                  "draft client %d: %r, plain %r" % (
                      i, got and got[:3], want[i]))
        sampled = completion(16, "Once", temperature=0.8, seed=5,
                             ignore_eos=True)
        a, b = solo(spec, sampled), solo(spec, sampled)
        check(a == b and len(a[1]) == 16, "seeded draft sampling: %r %r" % (
            a, b))
        m = spec.metrics()
        check(m["nascent_draft_tokens_total"] > 0 and
              0 <= m["nascent_draft_tokens_accepted_total"]
              <= m["nascent_draft_tokens_total"],
              "draft metrics %r" % {k: v for k, v in m.items()
                                    if "draft" in k})
        check(spec.wait_idle(), "draft server idle after")
    finally:
        check(spec.stop() == 0, "draft server exit status")


def test_sigterm_with_stream(binary, model):
    # (model: the slow one, still generating when the signal comes.)
    srv = Server(binary, model, "-np", "2", "--shutdown-grace", "0.3")
    results = {}
    t = threading.Thread(target=stream, args=(
        srv, completion(5000, "forever", ignore_eos=True), results, "s"))
    t.start()
    time.sleep(0.5)
    rc = srv.stop()
    t.join(30)
    check(rc == 0, "SIGTERM: exit status %s" % rc)
    got = results.get("s")
    check(got is not None and got[3][-1] == b"[DONE]",
          "the stream in flight ends with [DONE] on shutdown")


def main():
    binary = sys.argv[1]
    if shutil.which("curl") is None:
        print("SKIP: curl is not installed")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        model = make_model(binary, tmp)
        slow = make_model(binary, tmp, name="slow.gguf", dim=256, layers=4)
        draft = make_model(binary, tmp, seed=2, name="draft.gguf", layers=1)
        srv = Server(binary, model, "-np", "8", "-c", "4096", "--max-body",
                     "65536")
        slow_srv = Server(binary, slow, "-np", "2")
        try:
            for name, fn in [("framing", lambda: test_framing_with_curl(srv)),
                             ("errors", lambda: test_errors(srv, binary,
                                                            model, slow)),
                             ("tokenize", lambda: test_tokenize(srv)),
                             ("n", lambda: test_n_choices_streamed(srv)),
                             ("concurrent", lambda: test_concurrent_greedy(
                                 srv)),
                             ("drop", lambda: test_drop_frees_slot(
                                 slow_srv)),
                             ("draft", lambda: test_draft(srv, binary, model,
                                                          draft))]:
                t0 = time.time()
                fn()
                print("%s: %.1f s" % (name, time.time() - t0), flush=True)
        finally:
            for server in (srv, slow_srv):
                rc = server.stop()
                check(rc == 0, "server exit status %s" % rc)
        test_sigterm_with_stream(binary, slow)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

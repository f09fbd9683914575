#!/usr/bin/env python3
"""`nascent serve` through OpenAI's official Python client (the pinned
`openai` of build/serve-venv, scripts/setup_serve.sh) on loopback, with a
random-weight model carrying a ChatML template: chat and completion,
streaming (deltas joined equal the whole reply; the usage chunk), stop
strings, usage counts checked against /tokenize of the prompt the template
renders, n, logprobs, models.list, and the client's error classes for 400,
401, 404 and 413.

Usage: serve_openai_test.py NASCENT_BINARY
Exit status: 0 passed, 1 failed, 77 skipped (no openai package).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_common import Server, make_model  # noqa: E402

try:
    import openai
except ImportError:
    print("SKIP: the openai package is not installed (scripts/setup_serve.sh "
          "installs it into build/serve-venv)")
    sys.exit(77)

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def expect_error(cls, status, fn, what):
    try:
        fn()
    except cls as e:
        check(e.status_code == status, "%s: status %d" % (what, e.status_code))
        body = e.body if isinstance(e.body, dict) else {}
        check(isinstance(body.get("message"), str),
              "%s: error body %s" % (what, e.body))
        return
    except Exception as e:  # noqa: BLE001
        check(False, "%s: %s instead of %s" % (what, type(e).__name__,
                                               cls.__name__))
        return
    check(False, "%s: no error" % what)


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        model = make_model(binary, tmp)
        srv = Server(binary, model, "-np", "4", "-c", "2048", "--api-key",
                     "k-123", "--alias", "tiny")
        try:
            run(srv)
        finally:
            rc = srv.stop()
            check(rc == 0, "server exit status %s" % rc)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all passed (openai %s)" % openai.__version__)
    return 0


def run(srv):
    client = openai.OpenAI(base_url=srv.base + "/v1", api_key="k-123",
                           max_retries=0, timeout=60)
    models = client.models.list()
    check([m.id for m in models.data] == ["tiny"], "models.list")

    # Chat: usage counts the rendered ChatML prompt's tokens.
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hello there!"}]
    r = client.chat.completions.create(model="tiny", messages=messages,
                                       max_tokens=10, temperature=0)
    reply = r.choices[0].message.content
    check(r.object == "chat.completion" and isinstance(reply, str),
          "chat reply")
    check(r.choices[0].message.role == "assistant", "assistant role")
    rendered = "".join("<|im_start|>%s\n%s<|im_end|>\n" % (m["role"],
                                                          m["content"])
                       for m in messages) + "<|im_start|>assistant\n"
    status, tok = srv.request("POST", "/tokenize",
                              {"content": rendered, "add_special": True},
                              headers={"Authorization": "Bearer k-123"})
    check(r.usage.prompt_tokens == len(tok["tokens"]),
          "prompt_tokens %d == %d tokens of the rendered prompt" %
          (r.usage.prompt_tokens, len(tok["tokens"])))
    check(r.usage.total_tokens == r.usage.prompt_tokens +
          r.usage.completion_tokens, "total_tokens")
    check(r.usage.completion_tokens <= 10, "max_tokens bounds the reply")
    if r.choices[0].finish_reason == "length":
        check(r.usage.completion_tokens == 10, "length after 10 tokens")

    # Streaming chat: the deltas joined are the whole reply; usage last.
    chunks = list(client.chat.completions.create(
        model="tiny", messages=messages, max_tokens=10, temperature=0,
        stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks
                   if c.choices)
    check(text == reply, "streamed %r == whole %r" % (text, reply))
    check(chunks[0].choices[0].delta.role == "assistant", "first delta role")
    check(chunks[-1].choices == [] and chunks[-1].usage is not None and
          chunks[-1].usage.completion_tokens == r.usage.completion_tokens,
          "usage chunk")
    check(chunks[-2].choices[0].finish_reason == r.choices[0].finish_reason,
          "stream finish_reason")

    # Completion with a stop string cut from the free run's text.
    free = client.completions.create(model="tiny", prompt="Once upon a time",
                                     max_tokens=16, temperature=0)
    ftext = free.choices[0].text
    check(free.object == "text_completion" and len(ftext) > 0,
          "completion text")
    if len(ftext) >= 4:
        stop = ftext[2:4]
        cut = ftext[:ftext.index(stop)]
        s = client.completions.create(model="tiny", prompt="Once upon a time",
                                      max_tokens=16, temperature=0,
                                      stop=[stop, "\u00e9\u00e9"])
        check(s.choices[0].text == cut and
              s.choices[0].finish_reason == "stop",
              "stop %r: %r (want %r)" % (stop, s.choices[0].text, cut))
    sc = client.completions.create(model="tiny", prompt="Once upon a time",
                                   max_tokens=16, temperature=0, stream=True)
    stext = "".join(c.choices[0].text for c in sc)
    check(stext == ftext, "streamed completion %r == %r" % (stext, ftext))

    # n choices, sampled with a seed: reproducible; greedy: identical.
    a = client.completions.create(model="tiny", prompt="Seeds", n=3,
                                  max_tokens=8, temperature=1.0, seed=7)
    b = client.completions.create(model="tiny", prompt="Seeds", n=3,
                                  max_tokens=8, temperature=1.0, seed=7)
    check(len(a.choices) == 3 and [c.index for c in a.choices] == [0, 1, 2],
          "n = 3 choices")
    check([c.text for c in a.choices] == [c.text for c in b.choices],
          "the same seed, the same choices")
    g = client.completions.create(model="tiny", prompt="Seeds", n=2,
                                  max_tokens=8, temperature=0)
    check(g.choices[0].text == g.choices[1].text, "greedy choices agree")

    # Logprobs: one entry per token, top alternatives sorted, greedy first.
    lp = client.chat.completions.create(model="tiny", messages=messages,
                                        max_tokens=6, temperature=0,
                                        logprobs=True, top_logprobs=3)
    content = lp.choices[0].logprobs.content
    check(len(content) == lp.usage.completion_tokens, "a logprob per token")
    for t in content:
        check(len(t.top_logprobs) == 3 and t.top_logprobs[0].token == t.token
              and t.logprob <= 0.0, "top_logprobs of %r" % t.token)

    # Errors, as the client raises them.
    expect_error(openai.BadRequestError, 400, lambda: client.completions.create(
        model="tiny", prompt="x", temperature=5), "temperature 5")
    expect_error(openai.BadRequestError, 400,
                 lambda: client.chat.completions.create(
                     model="tiny", messages=[{"role": "user"}]),
                 "a message without content")
    bad_key = openai.OpenAI(base_url=srv.base + "/v1", api_key="nope",
                            max_retries=0)
    expect_error(openai.AuthenticationError, 401,
                 lambda: bad_key.models.list(), "a wrong key")
    expect_error(openai.NotFoundError, 404,
                 lambda: client.get("/nowhere", cast_to=object),
                 "an unknown route")
    expect_error(openai.APIStatusError, 413, lambda: client.completions.create(
        model="tiny", prompt=[5] * 600, max_tokens=2), "an over-long prompt")


if __name__ == "__main__":
    sys.exit(main())

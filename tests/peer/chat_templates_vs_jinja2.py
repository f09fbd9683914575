"""Renders real chat templates with nascent and with Jinja2, byte for byte.

For every template in $NASCENT_DATA_DIR/templates (llama.cpp's collection of
real models' templates, from llama-cpp-python's source distribution) and
every tokenizer.chat_template in $NASCENT_DATA_DIR/tokenizer/ggml-vocab-*.gguf,
a set of conversations (system + user, multi-turn, with and without a
generation prompt, non-ASCII text, tool calls for templates that take tools,
enable_thinking and reasoning_content for templates that read them)
goes through `nascent chat-template render` and through Jinja2 set up as
Hugging Face's apply_chat_template sets it up (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loop controls, {% generation %}, its tojson,
raise_exception, strftime_now at a fixed time). A case passes when both give
the same bytes, or both refuse the conversation in the same way (the
template's raise_exception, or an error such as None + str). A template
passes when all its cases do; templates the README lists as known failures
may fail, the rest must pass, and at least MIN_PASS of them overall.

usage: chat_templates_vs_jinja2.py NASCENT_CLI DATA_DIR [-v] [-k NAME]
Exits 77 (skipped) without jinja2 or the test data.
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("SKIP: python3 jinja2 is not installed (apt-get install python3-jinja2)")
    sys.exit(77)

from gguf_min import GGUF  # noqa: E402

MIN_PASS = 65
NOW = 1721988000  # 2024-07-26 10:00:00 UTC.
# Templates whose failure is expected, with the reason (also in README.md).
KNOWN_FAILURES = {
}


class AssistantTracker(jinja2.ext.Extension):
    # Hugging Face's {% generation %}: renders its body in place.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(
            self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def jinja_env():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[AssistantTracker, jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None,
               sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW).strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}]

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "What is the capital of France?"}
ASSISTANT = {"role": "assistant", "content": "The capital of France is Paris."}
USER2 = {"role": "user", "content": "And of Germany?"}
NON_ASCII = {"role": "user",
             "content": "Grüße aus Köln! 你好，世界 🌍 — «ça va?»\n  Tabs\tand  spaces  "}


def conversations(source):
    """(label, messages, add_generation_prompt, tools, extra variables)."""
    takes_tools = "tools" in source
    out = [
        ("system+user", [SYSTEM, USER], True, None, {}),
        ("system+user, no generation prompt", [SYSTEM, USER], False, None, {}),
        ("user", [USER], True, None, {}),
        ("multi-turn", [SYSTEM, USER, ASSISTANT, USER2], True, None, {}),
        ("multi-turn without system", [USER, ASSISTANT, USER2], True, None, {}),
        ("ends with assistant", [USER, ASSISTANT], False, None, {}),
        ("non-ASCII", [NON_ASCII], True, None, {}),
    ]
    if "enable_thinking" in source:
        # llama.cpp's --chat-template-kwargs; Qwen3-style templates.
        for flag in (False, True):
            out.append((f"enable_thinking={flag}", [SYSTEM, USER], True, None,
                        {"enable_thinking": flag}))
    if "reasoning_content" in source:
        thought = dict(ASSISTANT, reasoning_content="Paris is the capital.")
        out.append(("reasoning_content", [USER, thought, USER2], True, None,
                    {}))
    if takes_tools:
        call = {"role": "assistant", "content": "",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "get_weather",
                                             "arguments": {"city": "Paris"}}}]}
        result = {"role": "tool", "tool_call_id": "call_1",
                  "name": "get_weather",
                  "content": "{\"temperature\": 21, \"unit\": \"celsius\"}"}
        out.append(("tools", [SYSTEM, USER], True, TOOLS, {}))
        out.append(("tool call and result",
                    [SYSTEM, {"role": "user", "content": "Weather in Paris?"},
                     call, result], True, TOOLS, {}))
        # OpenAI's API sends null content beside tool calls.
        out.append(("tool call with null content",
                    [{"role": "user", "content": "Weather in Paris?"},
                     dict(call, content=None), result], True, TOOLS, {}))
    return out


def jinja_render(env, source, messages, add_gen, tools, bos, eos, extra):
    try:
        return env.from_string(source).render(
            messages=messages, tools=tools, documents=None,
            add_generation_prompt=add_gen, bos_token=bos, eos_token=eos,
            **extra), None
    except Exception as e:  # Both sides may refuse a conversation.
        return None, f"{type(e).__name__}: {e}"


def nascent_render(cli, template_path, messages, add_gen, tools, bos, eos,
                   extra, tmp):
    mpath = os.path.join(tmp, "messages.json")
    with open(mpath, "w", encoding="utf-8") as f:
        json.dump(messages, f, ensure_ascii=False)
    cmd = [cli, "chat-template", "render", "--template", template_path,
           "--messages", "@" + mpath, "--bos", bos, "--eos", eos,
           "--now", str(NOW)]
    if add_gen:
        cmd.append("--add-generation-prompt")
    if extra:
        cmd += ["--chat-template-kwargs", json.dumps(extra)]
    if tools is not None:
        tpath = os.path.join(tmp, "tools.json")
        with open(tpath, "w", encoding="utf-8") as f:
            json.dump(tools, f, ensure_ascii=False)
        cmd += ["--tools", "@" + tpath]
    p = subprocess.run(cmd, capture_output=True, timeout=60)
    if p.returncode != 0:
        return None, p.stderr.decode("utf-8", "replace").strip()
    return p.stdout.decode("utf-8"), None


def templates(data_dir, tmp):
    tdir = os.path.join(data_dir, "templates")
    for name in sorted(os.listdir(tdir)):
        if name.endswith(".jinja"):
            path = os.path.join(tdir, name)
            with open(path, encoding="utf-8") as f:
                yield name[:-6], path, f.read(), "<s>", "</s>"
    vdir = os.path.join(data_dir, "tokenizer")
    for name in sorted(os.listdir(vdir)):
        if not (name.startswith("ggml-vocab-") and name.endswith(".gguf")):
            continue
        g = GGUF(os.path.join(vdir, name))
        source = g.kv.get("tokenizer.chat_template")
        if not source:
            continue
        tokens = g.kv.get("tokenizer.ggml.tokens", [])

        def tok(key, default):
            i = g.kv.get(key)
            return tokens[i] if i is not None and 0 <= i < len(tokens) else default
        path = os.path.join(tmp, name + ".jinja")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        yield (name, path, source, tok("tokenizer.ggml.bos_token_id", ""),
               tok("tokenizer.ggml.eos_token_id", ""))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "-v" in sys.argv
    only = None
    if "-k" in sys.argv:
        only = sys.argv[sys.argv.index("-k") + 1]
        args.remove(only)
    if len(args) != 2:
        print(__doc__)
        return 2
    cli, data_dir = args
    if not os.path.isdir(os.path.join(data_dir, "templates")):
        print(f"SKIP: no templates in {data_dir} (scripts/setup_testdata.sh)")
        return 77
    env = jinja_env()
    passed, failed, n_cases, n_refused = [], [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, source, bos, eos in templates(data_dir, tmp):
            if only and only not in name:
                continue
            problems = []
            for label, msgs, add_gen, tools, extra in conversations(source):
                n_cases += 1
                want, werr = jinja_render(env, source, msgs, add_gen, tools,
                                          bos, eos, extra)
                got, gerr = nascent_render(cli, path, msgs, add_gen, tools,
                                           bos, eos, extra, tmp)
                if werr and gerr:
                    # The same kind of refusal: raise_exception on both
                    # sides, or an error in the template on both.
                    raised = werr.startswith("TemplateError:")
                    if raised == ("rejected the conversation" in gerr):
                        n_refused += 1
                        continue
                if werr or gerr or want != got:
                    if werr and gerr:
                        why = f"jinja2 raised {werr}; nascent {gerr}"
                    elif werr:
                        why = f"jinja2 raised {werr}; nascent rendered"
                    elif gerr:
                        why = f"nascent failed: {gerr}"
                    else:
                        i = next((k for k in range(min(len(want), len(got)))
                                  if want[k] != got[k]), min(len(want), len(got)))
                        why = (f"differs at byte {i}: jinja2 {want[i:i+60]!r} "
                               f"nascent {got[i:i+60]!r}")
                    problems.append(f"{label}: {why}")
            if problems:
                failed.append(name)
                print(f"FAIL {name}")
                for p in problems[: None if verbose else 2]:
                    print(f"     {p}")
            else:
                passed.append(name)
                if verbose:
                    print(f"ok   {name}")
    total = len(passed) + len(failed)
    print(f"{len(passed)} of {total} templates render as Jinja2 does "
          f"({n_cases} cases, {n_refused} refused by both)")
    unexpected = [n for n in failed if n not in KNOWN_FAILURES]
    if only:
        return 1 if failed else 0
    if unexpected:
        print("unexpected failures: " + ", ".join(unexpected))
        return 1
    if len(passed) < MIN_PASS:
        print(f"fewer than {MIN_PASS} templates pass")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
